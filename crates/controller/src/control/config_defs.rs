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

const COMPRESSION_TYPES: &[&str] = &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
const CLEANUP_POLICIES: &[&str] = &["compact", "delete"];
const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];

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

const fn syn(name: &'static str) -> BrokerSynonym {
    BrokerSynonym { name, to_millis: 1 }
}
const fn syn_minutes(name: &'static str) -> BrokerSynonym {
    BrokerSynonym {
        name,
        to_millis: 60_000,
    }
}
const fn syn_hours(name: &'static str) -> BrokerSynonym {
    BrokerSynonym {
        name,
        to_millis: 3_600_000,
    }
}
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
/// Kafka's `compression.gzip.level` validator: 1 to 9, or -1 (zlib's default), checked by
/// name in [`ConfigDef::validate`].
pub const COMPRESSION_GZIP_LEVEL: &str = "compression.gzip.level";
/// Kafka's `segment.bytes` floor (`LogConfig`: `atLeast(1024 * 1024)`): a segment must hold
/// a producer's default 1 MiB batch.
pub const MIN_SEGMENT_BYTES: i32 = 1024 * 1024;
/// Kafka's testing-only topic config that overrides `segment.bytes` without its floor
/// (`LogConfig.INTERNAL_SEGMENT_BYTES_CONFIG`), so tests can roll small segments.
pub const INTERNAL_SEGMENT_BYTES: &str = "internal.segment.bytes";
/// The smallest `internal.segment.bytes` the log store can roll at (a segment holds at least
/// a batch header): Kafka's ConfigDef takes any int, kraftd refuses what it cannot honour.
pub const MIN_INTERNAL_SEGMENT_BYTES: i32 = 14;

/// Kafka's topic configs (`TopicConfig`, validated as in `LogConfig`), in name order, with
/// `LogConfig`'s defaults (each equal to the default of its broker synonym chain).
pub const TOPIC_CONFIGS: &[ConfigDef] = &[
    def(
        "cleanup.policy",
        ConfigType::List {
            valid: CLEANUP_POLICIES,
            empty: true,
        },
    )
    .default("delete")
    .doc("This config designates the retention policy to use on log segments. The \"delete\" policy (which is the default) will discard old segments when their retention time or size limit has been reached. The \"compact\" policy will enable log compaction, which retains the latest value for each key."),
    def(COMPRESSION_GZIP_LEVEL, int_range(-1, 9))
        .default("-1")
        .doc("The compression level to use if compression.type is set to gzip."),
    def("compression.lz4.level", int_range(1, 17))
        .default("9")
        .doc("The compression level to use if compression.type is set to lz4."),
    def(
        "compression.type",
        ConfigType::String {
            valid: COMPRESSION_TYPES,
        },
    )
    .default("producer")
    .doc("Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer."),
    def("compression.zstd.level", int_range(-131072, 22))
        .default("3")
        .doc("The compression level to use if compression.type is set to zstd."),
    def("delete.retention.ms", long(0))
        .default("86400000")
        .doc("The amount of time to retain delete tombstone markers for log compacted topics."),
    def("errors.deadletterqueue.group.enable", BOOLEAN)
        .default("false")
        .doc("Enable this topic to be used as a dead-letter queue for share groups."),
    def("file.delete.delay.ms", long(0))
        .default("60000")
        .doc("The time to wait before deleting a file from the filesystem."),
    def("flush.messages", long(1))
        .default(LONG_MAX)
        .doc("This setting allows specifying an interval at which we will force an fsync of data written to the log."),
    def("flush.ms", long(0))
        .default(LONG_MAX)
        .doc("This setting allows specifying a time interval at which we will force an fsync of data written to the log."),
    def("follower.replication.throttled.replicas", ANY_LIST)
        .default("")
        .doc("A list of replicas for which log replication should be throttled on the follower side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic."),
    def("index.interval.bytes", int(0))
        .default("4096")
        .doc("This setting controls how frequently Kafka adds an index entry to its offset index."),
    def(INTERNAL_SEGMENT_BYTES, int(i32::MIN))
        .internal()
        .doc("The maximum size of a single log file. This should be used for testing only."),
    def("leader.replication.throttled.replicas", ANY_LIST)
        .default("")
        .doc("A list of replicas for which log replication should be throttled on the leader side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic."),
    def("local.retention.bytes", long(-2))
        .default("-2")
        .doc("The maximum size of local log segments that can grow for a partition before it deletes the old segments. Default value is -2, it represents `retention.bytes` value to be used."),
    def("local.retention.ms", long(-2))
        .default("-2")
        .doc("The number of milliseconds to keep the local log segment before it gets deleted. Default value is -2, it represents `retention.ms` value is to be used."),
    def("max.compaction.lag.ms", long(1))
        .default(LONG_MAX)
        .doc("The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted."),
    def("max.decompressed.message.bytes", int_range(1, 2147483639))
        .default("2147483639")
        .doc("The maximum decompressed size, in bytes, of a single record the broker will accept; larger records are rejected with an InvalidRecordException."),
    def("max.message.bytes", int(0))
        .default("1048588")
        .doc("The largest record batch size allowed by Kafka (after compression if compression is enabled)."),
    def("message.timestamp.after.max.ms", long(0))
        .default("3600000")
        .doc("This configuration sets the allowable timestamp difference between the message timestamp and the broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration."),
    def("message.timestamp.before.max.ms", long(0))
        .default(LONG_MAX)
        .doc("This configuration sets the allowable timestamp difference between the broker's timestamp and the message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration."),
    def(
        "message.timestamp.type",
        ConfigType::String {
            valid: TIMESTAMP_TYPES,
        },
    )
    .default("CreateTime")
    .doc("Define whether the timestamp in the message is message create time or log append time."),
    def(
        "min.cleanable.dirty.ratio",
        ConfigType::Double { min: 0.0, max: 1.0 },
    )
    .default("0.5")
    .doc("This configuration controls how frequently the log compactor will attempt to clean the log (assuming log compaction is enabled)."),
    def("min.compaction.lag.ms", long(0))
        .default("0")
        .doc("The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted."),
    def("min.insync.replicas", int(1))
        .default("1")
        .doc("When a producer sets acks to \"all\" (or \"-1\"), this configuration specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful."),
    def("preallocate", BOOLEAN)
        .default("false")
        .doc("True if we should preallocate the file on disk when creating a new log segment."),
    def("remote.copy.lag.bytes", long(-1))
        .default("-1")
        .doc("Controls one of the two upload eligibility checks (time and size) for copying segments to remote storage."),
    def("remote.copy.lag.ms", long(-1))
        .default("0")
        .doc("Controls one of the two upload eligibility checks (time and size) for copying segments to remote storage."),
    def("remote.log.copy.disable", BOOLEAN)
        .default("false")
        .doc("Determines whether tiered data for a topic should become read only, and no more data uploading on a topic."),
    def("remote.log.delete.on.disable", BOOLEAN)
        .default("false")
        .doc("Determines whether tiered data for a topic should be deleted after tiered storage is disabled on a topic."),
    def("remote.storage.enable", BOOLEAN)
        .default("false")
        .doc("To enable tiered storage for a topic, set this configuration to true."),
    def("retention.bytes", long(i64::MIN))
        .default("-1")
        .doc("This configuration controls the maximum size a partition (which consists of log segments) can grow to before we will discard old log segments to free up space if we are using the \"delete\" retention policy."),
    def("retention.ms", long(-1))
        .default("604800000")
        .doc("This configuration controls the maximum time we will retain a log before we will discard old log segments to free up space if we are using the \"delete\" retention policy. If set to -1, no time limit is applied."),
    def("segment.bytes", int(MIN_SEGMENT_BYTES))
        .default("1073741824")
        .doc("This configuration controls the segment file size for the log."),
    def("segment.index.bytes", int(4))
        .default("10485760")
        .doc("This configuration controls the size of the index that maps offsets to file positions."),
    def("segment.jitter.ms", long(0))
        .default("0")
        .doc("The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering herds of segment rolling"),
    def("segment.ms", long(1))
        .default("604800000")
        .doc("This configuration controls the period of time after which Kafka will force the log to roll even if the segment file isn't full to ensure that retention can delete or compact old data."),
    def("unclean.leader.election.enable", BOOLEAN)
        .default("false")
        .doc("Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss."),
];

/// Kafka's `GroupConfig.SHARE_AUTO_OFFSET_RESET_CONFIG`: `latest`, `earliest` or
/// `by_duration:<ISO-8601 duration>`, checked by name in [`ConfigDef::validate`] as Kafka's
/// `ShareGroupAutoOffsetResetStrategy.Validator`.
pub const SHARE_AUTO_OFFSET_RESET: &str = "share.auto.offset.reset";

/// Kafka's per-group configs (`GroupConfig.CONFIG_DEF`, Kafka 4.4.0), in name order, set on a
/// `ConfigResource` of type GROUP; each default is its broker synonym's default
/// (`GroupConfig.ALL_GROUP_CONFIG_SYNONYMS`, [`group_config_synonym`]). Beyond each key's own
/// validator, the controller checks the value against its node's bounds
/// ([`GroupConfigBounds::validate`]), as Kafka's `GroupConfig.validate`.
pub const GROUP_CONFIGS: &[ConfigDef] = &[
    def("consumer.assignment.interval.ms", int(0))
        .default("1000")
        .doc("The interval between assignment updates for a consumer group."),
    def("consumer.assignor.offload.enable", BOOLEAN)
        .default("true")
        .internal()
        .doc("Whether to offload consumer group assignment to a group coordinator background thread."),
    def("consumer.heartbeat.interval.ms", int(1))
        .default("5000")
        .doc("The heartbeat interval given to the members of a consumer group."),
    def("consumer.session.timeout.ms", int(1))
        .default("45000")
        .doc("The timeout to detect client failures when using the consumer group protocol."),
    def("errors.deadletterqueue.copy.record.enable", BOOLEAN)
        .default("false")
        .doc("When writing onto the dead-letter queue topic, whether to copy the original record onto the DLQ topic, or just write a record containing the context information headers."),
    def("errors.deadletterqueue.topic.name", STRING)
        .default("")
        .doc("The name of the topic to be used as the dead-letter queue (DLQ) topic for this share group. If blank (the default), the group does not have a DLQ topic."),
    def("share.assignment.interval.ms", int(0))
        .default("1000")
        .doc("The interval between assignment updates for a share group."),
    def("share.assignor.offload.enable", BOOLEAN)
        .default("true")
        .internal()
        .doc("Whether to offload share group assignment to a group coordinator background thread."),
    def(SHARE_AUTO_OFFSET_RESET, STRING)
        .default("latest")
        .doc("The strategy to initialize the share-partition start offset: earliest, latest, or by_duration:<duration> (ISO8601, PnDTnHnMn.nS, not negative)."),
    def("share.delivery.count.limit", int(2))
        .default("5")
        .doc("The maximum number of delivery attempts for a record delivered to a share group."),
    def("share.heartbeat.interval.ms", int(1))
        .default("5000")
        .doc("The heartbeat interval given to the members of a share group."),
    def("share.isolation.level", ConfigType::String { valid: &["read_committed", "read_uncommitted"] })
        .default("read_uncommitted")
        .doc("Controls how to read records written transactionally: read_committed delivers only committed transactional records, read_uncommitted all of them."),
    def("share.partition.max.record.locks", int(100))
        .default("2000")
        .doc("Share-group record lock limit per share-partition."),
    def("share.record.lock.duration.ms", int(1000))
        .default("30000")
        .doc("The record acquisition lock duration in milliseconds for share groups."),
    def("share.renew.acknowledge.enable", BOOLEAN)
        .default("true")
        .doc("Whether the renew acknowledge type is enabled for the share group."),
    def("share.session.timeout.ms", int(1))
        .default("45000")
        .doc("The timeout to detect client failures when using the share group protocol."),
    def("streams.acceptable.recovery.lag", long(0))
        .default("10000")
        .internal()
        .doc("The maximum lag (in offsets) at which a task is considered caught up."),
    def("streams.assignment.interval.ms", int(0))
        .default("1000")
        .doc("The interval between assignment updates for a streams group."),
    def("streams.assignor.name", STRING)
        .doc("The task assignor to use for this streams group, by short name, from the broker's group.streams.assignors; when unset, the first of them."),
    def("streams.assignor.offload.enable", BOOLEAN)
        .default("true")
        .internal()
        .doc("Whether to offload streams group assignment to a group coordinator background thread."),
    def("streams.heartbeat.interval.ms", int(1))
        .default("5000")
        .doc("The heartbeat interval given to the members of a streams group."),
    def("streams.initial.rebalance.delay.ms", int(0))
        .default("3000")
        .doc("The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance."),
    def("streams.num.standby.replicas", int(0))
        .default("0")
        .doc("The number of standby replicas for each task."),
    def("streams.num.warmup.replicas", int(0))
        .default("2")
        .internal()
        .doc("The number of warmup replicas for each task."),
    def("streams.rack.aware.assignment.tags", ANY_LIST)
        .default("")
        .doc("The list of client tag keys used for rack-aware standby task assignment."),
    def("streams.session.timeout.ms", int(1))
        .default("45000")
        .doc("The timeout to detect client failures when using the streams group protocol."),
    def("streams.task.offset.interval.ms", int(1))
        .default("60000")
        .internal()
        .doc("The interval in milliseconds with which streams clients report their task offsets."),
];

/// The broker configs kraftd accepts dynamically (per broker or as the cluster default),
/// with `KafkaConfig`'s defaults.
pub const BROKER_CONFIGS: &[ConfigDef] = &[
    def("background.threads", int(1))
        .default("10")
        .doc("The number of threads to use for various background processing tasks"),
    def(COMPRESSION_GZIP_LEVEL, int_range(-1, 9))
        .default("-1")
        .doc("The compression level to use if compression.type is set to gzip."),
    def("compression.lz4.level", int_range(1, 17))
        .default("9")
        .doc("The compression level to use if compression.type is set to lz4."),
    def(
        "compression.type",
        ConfigType::String {
            valid: COMPRESSION_TYPES,
        },
    )
    .default("producer")
    .doc("Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer."),
    def("compression.zstd.level", int_range(-131072, 22))
        .default("3")
        .doc("The compression level to use if compression.type is set to zstd."),
    def("config.providers", ANY_LIST)
        .default("")
        .doc("Comma-separated alias names for classes implementing the <code>ConfigProvider</code> interface. This enables loading configuration data (such as passwords, API keys, and other credentials) from external sources."),
    // Per broker in Kafka (`DynamicBrokerConfig.PER_BROKER_CONFIGS`): the entries are that
    // broker's own log dirs. Entries, duplicates and `*` are checked by the broker
    // (`broker/src/replica/cordoned_log_dirs.rs`), which knows its log.dirs, as Kafka's.
    def("cordoned.log.dirs", ANY_LIST)
        .default("")
        .doc("A comma-separated list of the directories that are cordoned. Entries in this list must be entries in log.dirs or log.dir configuration. This can also be set to * to cordon all log directories.")
        .kafka(Importance::Medium, UpdateMode::PerBroker),
    def("errors.deadletterqueue.auto.create.topics.enable", BOOLEAN)
        .default("false")
        .doc("Whether automatic creation of DLQ topics is enabled (KIP-1191). When a share group has a DLQ topic configured, this setting controls whether the broker will automatically create the topic if it does not exist."),
    def("errors.deadletterqueue.topic.name.prefix", STRING)
        .default("dlq.")
        .doc("The required prefix of topic names used by dead-letter queue topics for share groups. When set to \"\", there is no restriction on the names used for dead-letter queue topics."),
    def("follower.fetch.last.tiered.offset.enable", BOOLEAN)
        .default("false")
        .doc("When enabled, an empty follower skips offsets up to the last tiered offset and begins replication from the next offset."),
    def("follower.replication.throttled.rate", long(0))
        .default(LONG_MAX)
        .doc("A long representing the upper bound (bytes/sec) on replication traffic for followers enumerated in the property follower.replication.throttled.replicas (for each topic). This property can be only set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour."),
    def("group.consumer.assignment.interval.ms", int(0))
        .default("1000")
        .doc("The interval between assignment updates for a consumer group."),
    def("group.consumer.assignor.offload.enable", BOOLEAN)
        .default("true")
        .internal()
        .doc("Whether to offload consumer group assignment to a group coordinator background thread."),
    def("group.coordinator.cached.buffer.max.bytes", int(524288))
        .default("1048588")
        .doc("The maximum buffer size that the GroupCoordinator will retain for reuse. Note: Setting this larger than the maximum message size is not recommended. In this case, every write buffer will be eligible for recycling, which renders this configuration ineffective as a size limit."),
    def("group.share.assignment.interval.ms", int(0))
        .default("1000")
        .doc("The interval between assignment updates for a share group."),
    def("group.share.assignor.offload.enable", BOOLEAN)
        .default("true")
        .internal()
        .doc("Whether to offload share group assignment to a group coordinator background thread."),
    def("group.streams.assignment.interval.ms", int(0))
        .default("1000")
        .doc("The interval between assignment updates for a streams group."),
    def("group.streams.assignor.offload.enable", BOOLEAN)
        .default("true")
        .internal()
        .doc("Whether to offload streams group assignment to a group coordinator background thread."),
    def("leader.replication.throttled.rate", long(0))
        .default(LONG_MAX)
        .doc("A long representing the upper bound (bytes/sec) on replication traffic for leaders enumerated in the property leader.replication.throttled.replicas (for each topic). This property can be only set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour."),
    def("log.cleaner.backoff.ms", long(0))
        .default("15000")
        .doc("The amount of time to sleep when there are no logs to clean"),
    def("log.cleaner.dedupe.buffer.size", long(i64::MIN))
        .default("134217728")
        .doc("The total memory used for log deduplication across all cleaner threads"),
    def("log.cleaner.delete.retention.ms", long(0))
        .default("86400000")
        .doc("The amount of time to retain tombstone message markers for log compacted topics."),
    def("log.cleaner.io.buffer.load.factor", ANY_DOUBLE)
        .default("0.9")
        .doc("Log cleaner dedupe buffer load factor. The percentage full the dedupe buffer can become."),
    def("log.cleaner.io.buffer.size", int(0))
        .default("524288")
        .doc("The total memory used for log cleaner I/O buffers across all cleaner threads"),
    def("log.cleaner.io.max.bytes.per.second", ANY_DOUBLE)
        .default("1.7976931348623157E308")
        .doc("The log cleaner will be throttled so that the sum of its read and write i/o will be less than this value on average"),
    def("log.cleaner.max.compaction.lag.ms", long(1))
        .default(LONG_MAX)
        .doc("The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted."),
    def("log.cleaner.min.cleanable.ratio", ConfigType::Double { min: 0.0, max: 1.0 })
        .default("0.5")
        .doc("The minimum ratio of dirty log to total log for a log to eligible for cleaning."),
    def("log.cleaner.min.compaction.lag.ms", long(0))
        .default("0")
        .doc("The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted."),
    def("log.cleaner.threads", int(0))
        .default("1")
        .doc("The number of background threads to use for log cleaning"),
    def(
        "log.cleanup.policy",
        ConfigType::List {
            valid: CLEANUP_POLICIES,
            empty: true,
        },
    )
    .default("delete")
    .doc("The default cleanup policy for segments beyond the retention window. A comma separated list of valid policies."),
    def("log.flush.interval.messages", long(1))
        .default(LONG_MAX)
        .doc("The number of messages accumulated on a log partition before messages are flushed to disk."),
    def("log.flush.interval.ms", long(0))
        .doc("The maximum time in ms that a message in any topic is kept in memory before flushed to disk. If not set, the value in log.flush.scheduler.interval.ms is used"),
    def("log.index.interval.bytes", int(0))
        .default("4096")
        .doc("The interval with which we add an entry to the offset index."),
    def("log.index.size.max.bytes", int(4))
        .default("10485760")
        .doc("The maximum size in bytes of the offset index"),
    def("log.local.retention.bytes", long(-2))
        .default("-2")
        .doc("The maximum size of local log segments that can grow for a partition before it gets eligible for deletion. Default value is -2, it represents `log.retention.bytes` value to be used."),
    def("log.local.retention.ms", long(-2))
        .default("-2")
        .doc("The number of milliseconds to keep the local log segments before it gets eligible for deletion. Default value is -2, it represents `log.retention.ms` value is to be used."),
    def("log.message.timestamp.after.max.ms", long(0))
        .default("3600000")
        .doc("This configuration sets the allowable timestamp difference between the message timestamp and the broker's timestamp."),
    def("log.message.timestamp.before.max.ms", long(0))
        .default(LONG_MAX)
        .doc("This configuration sets the allowable timestamp difference between the broker's timestamp and the message timestamp."),
    def(
        "log.message.timestamp.type",
        ConfigType::String {
            valid: TIMESTAMP_TYPES,
        },
    )
    .default("CreateTime")
    .doc("Define whether the timestamp in the message is message create time or log append time."),
    def("log.preallocate", BOOLEAN)
        .default("false")
        .doc("Should pre allocate file when create new segment?"),
    def("log.remote.copy.lag.bytes", long(-1))
        .default("-1")
        .doc("Controls one of the two upload eligibility checks (time and size) for copying segments to remote storage. A non-active segment is upload-eligible when either this size-based check or <code>log.remote.copy.lag.ms</code> is satisfied."),
    def("log.remote.copy.lag.ms", long(-1))
        .default("0")
        .doc("Controls one of the two upload eligibility checks (time and size) for copying segments to remote storage. A non-active segment is upload-eligible when either this time-based check or <code>log.remote.copy.lag.bytes</code> is satisfied."),
    def("log.retention.bytes", long(i64::MIN))
        .default("-1")
        .doc("The maximum size of the log before deleting it"),
    def("log.retention.ms", long(-1))
        .doc("The number of milliseconds to keep a log file before deleting it (in milliseconds), If not set, the value in log.retention.minutes is used. If set to -1, no time limit is applied."),
    def("log.roll.jitter.ms", long(i64::MIN))
        .doc("The maximum jitter to subtract from logRollTimeMillis (in milliseconds). If not set, the value in log.roll.jitter.hours is used"),
    def("log.roll.ms", long(1))
        .doc("The maximum time before a new log segment is rolled out (in milliseconds). If not set, the value in log.roll.hours is used"),
    def("log.segment.bytes", int(MIN_SEGMENT_BYTES))
        .default("1073741824")
        .doc("The maximum size of a single log file"),
    def("log.segment.delete.delay.ms", long(0))
        .default("60000")
        .doc("The amount of time to wait before deleting a file from the filesystem."),
    def("max.connections", int(0))
        .default("2147483647")
        .doc("The maximum number of connections we allow in the broker at any time."),
    def("max.decompressed.message.bytes", int_range(1, 2147483639))
        .default("2147483639")
        .doc("The maximum decompressed size, in bytes, of a single record the broker will accept; larger records are rejected with an <code>InvalidRecordException</code>."),
    def("message.max.bytes", int(0))
        .default("1048588")
        .doc("The largest record batch size allowed by Kafka (after compression if compression is enabled)."),
    def("metric.reporters", ANY_LIST)
        .default("org.apache.kafka.common.metrics.JmxReporter")
        .doc("A list of classes to use as metrics reporters. Implementing the <code>org.apache.kafka.common.metrics.MetricsReporter</code> interface allows plugging in classes that will be notified of new metric creation."),
    def("min.insync.replicas", int(1))
        .default("1")
        .doc("When a producer sets acks to \"all\" (or \"-1\"), this configuration specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful."),
    def("num.io.threads", int(1))
        .default("8")
        .doc("The number of threads that the server uses for processing requests, which may include disk I/O"),
    def("num.network.threads", int(1))
        .default("3")
        .doc("The number of threads that the server uses for receiving requests from the network and sending responses to the network."),
    def("num.recovery.threads.per.data.dir", int(1))
        .default("2")
        .doc("The number of threads per data directory to be used for log recovery at startup and flushing at shutdown"),
    def("num.replica.fetchers", int(1))
        .default("1")
        .doc("Number of fetcher threads used to replicate records from each source broker."),
    def("producer.id.expiration.ms", int(1))
        .default("86400000")
        .doc("The time in ms that a topic partition leader will wait before expiring producer IDs. Producer IDs will not expire while a transaction associated to them is still ongoing. Note that producer IDs may expire sooner if the last write from the producer ID is deleted due to the topic's retention settings."),
    def("remote.fetch.max.wait.ms", int(1))
        .default("500")
        .doc("The maximum amount of time the server will wait before answering the fetch request containing remote fetch partitions. It's important to be aware that the request will only be responded after all remote partitions have been successfully fetched, have failed, or this timeout is exceeded."),
    def("remote.list.offsets.request.timeout.ms", long(1))
        .default("30000")
        .doc("The maximum amount of time the server will wait for the remote list offsets request to complete."),
    def("remote.log.index.file.cache.total.size.bytes", long(1))
        .default("1073741824")
        .doc("The total size of the space allocated to store index files fetched from remote storage in the local storage."),
    def("remote.log.manager.copier.thread.pool.size", int(1))
        .default("10")
        .doc("Size of the thread pool used in scheduling tasks to copy segments."),
    def("remote.log.manager.copy.max.bytes.per.second", long(1))
        .default("9223372036854775807")
        .doc("The maximum number of bytes that can be copied from local storage to remote storage per second. This is a global limit for all the partitions that are being copied from local storage to remote storage."),
    def("remote.log.manager.expiration.thread.pool.size", int(1))
        .default("10")
        .doc("Size of the thread pool used in scheduling tasks to clean up the expired remote log segments."),
    def("remote.log.manager.fetch.max.bytes.per.second", long(1))
        .default("9223372036854775807")
        .doc("The maximum number of bytes that can be fetched from remote storage to local storage per second. This is a global limit for all the partitions that are being fetched from remote storage to local storage."),
    def("remote.log.manager.follower.thread.pool.size", int(1))
        .default("2")
        .doc("Size of the thread pool used in scheduling follower tasks to read the highest-uploaded remote-offset for follower partitions."),
    def("remote.log.reader.threads", int(1))
        .default("10")
        .doc("Size of the thread pool that is allocated for handling remote log reads."),
    def("replica.alter.log.dirs.io.max.bytes.per.second", long(0))
        .default(LONG_MAX)
        .doc("A long representing the upper bound (bytes/sec) on disk IO used for moving replica between log directories on the same broker. This property can be only set dynamically. It is suggested that the limit be kept above 1MB/s for accurate behaviour."),
    def("share.coordinator.cached.buffer.max.bytes", int(524288))
        .default("1048588")
        .doc("The maximum buffer size that the ShareCoordinator will retain for reuse. Note: Setting this larger than the maximum message size is not recommended. In this case, every write buffer will be eligible for recycling, which renders this configuration ineffective as a size limit."),
    def("transaction.partition.verification.enable", BOOLEAN)
        .default("true")
        .doc("Enable verification that checks that the partition has been added to the transaction before writing transactional records to the partition"),
    def("unclean.leader.election.enable", BOOLEAN)
        .default("false")
        .doc("Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss"),
];

/// Broker configs kraftd reads only from the node's properties file (read-only in
/// DescribeConfigs, refused by AlterConfigs): the broker synonyms of topic configs that are
/// not in [`BROKER_CONFIGS`], the node's own settings, and the secrets it may be given.
pub const STATIC_BROKER_CONFIGS: &[ConfigDef] = &[
    def("add.partitions.to.txn.retry.backoff.max.ms", int(0))
        .default("100")
        .doc("The maximum allowed timeout for adding partitions to transactions on the server side. It only applies to the actual add partition operations, not the verification. It will not be effective if it is larger than request.timeout.ms"),
    def("add.partitions.to.txn.retry.backoff.ms", int(1))
        .default("20")
        .doc("The server-side retry backoff when the server attemptsto add the partition to the transaction"),
    def("alter.config.policy.class.name", ConfigType::Class)
        .doc("The alter configs policy class that should be used for validation. The class should implement the <code>org.apache.kafka.server.policy.AlterConfigPolicy</code> interface. <p>Note: This policy runs on the controller instead of the broker.</p>"),
    def("auto.create.topics.enable", BOOLEAN)
        .default("true")
        .doc("Enable auto creation of topic on the server."),
    def("advertised.listeners", NON_EMPTY_LIST)
        .doc("Specifies the listener addresses that the Kafka brokers will advertise to clients and other brokers."),
    def("auto.leader.rebalance.enable", BOOLEAN)
        .default("true")
        .doc("Enables auto leader balancing. A background thread checks the distribution of partition leaders at regular intervals, configurable by leader.imbalance.check.interval.seconds. If the leader is imbalanced, leader rebalance to the preferred leader for partitions is triggered."),
    def("broker.heartbeat.interval.ms", int(i32::MIN))
        .default("2000")
        .doc("The length of time in milliseconds between broker heartbeats."),
    def("broker.id", int(i32::MIN))
        .default("-1")
        .doc("The broker id for this server. This configuration is deprecated and will be removed in Apache Kafka 5.0. Please use <code>node.id</code> instead."),
    def("controlled.shutdown.enable", BOOLEAN)
        .default("true")
        .doc("Enable controlled shutdown of the server."),
    def("controller.performance.always.log.threshold.ms", long(0))
        .default("2000")
        .internal()
        .doc("We will log an error message about controller events that take longer than this threshold."),
    def("controller.performance.sample.period.ms", long(100))
        .default("60000")
        .internal()
        .doc("The number of milliseconds between periodic controller event performance log messages."),
    def("controller.quorum.append.linger.ms", int(0))
        .default("25")
        .doc("The duration in milliseconds that the leader will wait for writes to accumulate before flushing them to disk."),
    def("controller.quorum.election.backoff.max.ms", int(0))
        .default("1000")
        .doc("Maximum time in milliseconds before starting new elections. This is used in the binary exponential backoff mechanism that helps prevent gridlocked elections"),
    def("controller.quorum.election.timeout.ms", int(0))
        .default("1000")
        .doc("Maximum time in milliseconds to wait without being able to fetch from the leader before triggering a new election"),
    def("controller.quorum.fetch.max.bytes", int(1))
        .default("1048576")
        .doc("Maximum amount of data to retrieve for each Fetch request. Always returns at least one batch even if it is greater than controller.quorum.fetch.max.bytes."),
    def("controller.quorum.fetch.snapshot.max.bytes", int(1))
        .default("1048576")
        .doc("Maximum amount of data to retrieve for each FetchSnapshot request to the controller."),
    def("controller.quorum.fetch.timeout.ms", int(0))
        .default("2000")
        .doc("Maximum time without a successful fetch from the current leader before becoming a candidate and triggering an election for voters; Maximum time a leader can go without receiving valid fetch or fetchSnapshot request from a majority of the quorum before resigning."),
    def("controller.quorum.request.timeout.ms", int(0))
        .default("2000")
        .doc("The configuration controls the maximum amount of time the client will wait for the response of a request. If the response is not received before the timeout elapses the client will resend the request if necessary or fail the request if retries are exhausted."),
    def("controller.quorum.retry.backoff.ms", int(0))
        .default("20")
        .doc("The amount of time to wait before attempting to retry a failed request to a given topic partition. This avoids repeatedly sending requests in a tight loop under some failure scenarios."),
    def("controller.socket.timeout.ms", int(i32::MIN))
        .default("30000")
        .doc("The socket timeout for controller-to-broker channels."),
    def("create.topic.policy.class.name", ConfigType::Class)
        .doc("The create topic policy class that should be used for validation. The class should implement the <code>org.apache.kafka.server.policy.CreateTopicPolicy</code> interface. <p>Note: This policy runs on the controller instead of the broker.</p>"),
    def("delete.records.purgatory.purge.interval.requests", int(i32::MIN))
        .default("1")
        .doc("The purge interval (in number of requests) of the delete records request purgatory"),
    def("delete.topic.enable", BOOLEAN)
        .default("true")
        .doc("When set to true, topics can be deleted by the admin client. When set to false, deletion requests will be explicitly rejected by the broker."),
    def("default.replication.factor", int(i32::MIN))
        .default("1")
        .doc("The replication factor for automatically created topics, and for topics created with -1 as the replication factor"),
    def("broker.rack", STRING).doc("Rack of the broker. This will be used in rack aware replication assignment for fault tolerance."),
    def("broker.session.timeout.ms", int(i32::MIN))
        .default("9000")
        .doc("The length of time in milliseconds that a broker lease lasts if no heartbeats are made."),
    def("connections.max.idle.ms", long(i64::MIN))
        .default("600000")
        .doc("Idle connections timeout: the server socket processor threads close the connections that idle more than this"),
    def("console.enable", BOOLEAN)
        .default("false")
        .doc("kraftd's own (Kafka has none): serve the read-only web console on the metrics.port listener beside /metrics. The embedded default (kraftd with no arguments) sets it to true. On a node with an authorizer the console asks for a SASL login through the node's SASL listener (at most 5 failed logins a minute per client address and per username, then HTTP 429 with Retry-After) and shows only what that principal may DESCRIBE; a node with an authorizer and no SASL listener offering SCRAM or PLAIN answers every console request with HTTP 403."),
    def("console.metrics.endpoints", ANY_LIST)
        .default("")
        .doc("kraftd's own (Kafka has none): the /metrics endpoints (host:port of each node's metrics.port, comma-separated) of the other nodes, as kraftd doctor --metrics takes them. The console's Health page reads them every round so that the doctor's findings cover every node's metrics, not only this node's (the quorum and the brokers' view are cluster-wide either way). Empty: this node's metrics only."),
    def("controller.listener.names", NON_EMPTY_LIST)
        .doc("A comma-separated list of the names of the listeners used by the controller."),
    def("controller.quorum.auto.join.enable", BOOLEAN)
        .default("false")
        .doc("Controls whether a KRaft controller should automatically join the cluster metadata partition for its cluster id."),
    def("controller.quorum.bootstrap.servers", ANY_LIST)
        .default("")
        .doc("List of endpoints to use for bootstrapping the cluster metadata."),
    def("controller.quorum.voters", ANY_LIST)
        .default("")
        .doc("Map of id/endpoint information for the set of voters in a comma-separated list of {id}@{host}:{port} entries."),
    def("early.start.listeners", ANY_LIST)
        .doc("A comma-separated list of listener names which may be started before the authorizer has finished initialization."),
    def("fetch.max.bytes", int(1024))
        .default("57671680")
        .doc("The maximum number of bytes we will return for a fetch request. Must be at least 1024."),
    def("fetch.purgatory.purge.interval.requests", int(i32::MIN))
        .default("1000")
        .doc("The purge interval (in number of requests) of the fetch request purgatory"),
    def("group.consumer.assignors", NON_EMPTY_LIST)
        .default("uniform,range")
        .doc("The server-side assignors as a list of either names for builtin assignors or full class names for customer assignors. The first one in the list is considered as the default assignor to be used in the case where the consumer does not specify an assignor."),
    def("group.consumer.heartbeat.interval.ms", int(1))
        .default("5000")
        .doc("The heartbeat interval given to the members of a consumer group."),
    def("group.consumer.max.assignment.interval.ms", int(0))
        .default("15000")
        .doc("The maximum interval between assignment updates for a consumer group."),
    def("group.consumer.max.heartbeat.interval.ms", int(1))
        .default("15000")
        .doc("The maximum heartbeat interval for registered consumers."),
    def("group.consumer.max.session.timeout.ms", int(1))
        .default("60000")
        .doc("The maximum allowed session timeout for registered consumers."),
    def("group.consumer.max.size", int(1))
        .default("2147483647")
        .doc("The maximum number of consumers that a single consumer group can accommodate."),
    def("group.consumer.migration.policy", ConfigType::CaseInsensitiveString { valid: &["DISABLED", "DOWNGRADE", "UPGRADE", "BIDIRECTIONAL"] })
        .default("bidirectional")
        .doc("The config that enables converting the non-empty classic group using the consumer embedded protocol to the non-empty consumer group using the consumer group protocol and vice versa."),
    def("group.consumer.min.assignment.interval.ms", int(0))
        .default("0")
        .doc("The minimum interval between assignment updates for a consumer group."),
    def("group.consumer.min.heartbeat.interval.ms", int(1))
        .default("5000")
        .doc("The minimum heartbeat interval for registered consumers."),
    def("group.consumer.min.session.timeout.ms", int(1))
        .default("45000")
        .doc("The minimum allowed session timeout for registered consumers."),
    def("group.consumer.regex.refresh.interval.ms", int(10000))
        .default("600000")
        .internal()
        .doc("The interval at which the group coordinator will refresh the topics matching the group subscribed regexes. This is only applicable to consumer groups using the consumer group protocol."),
    def("group.consumer.session.timeout.ms", int(1))
        .default("45000")
        .doc("The timeout to detect client failures when using the consumer group protocol."),
    def("group.coordinator.append.linger.ms", int(-1))
        .default("-1")
        .doc("The duration in milliseconds that the coordinator will wait for writes to accumulate before flushing them to disk."),
    def("group.coordinator.background.threads", int(1))
        .default("2")
        .doc("The number of threads used by the group coordinator for processing background tasks (e.g. updating regular expression subscriptions and offloaded assignments)."),
    def("group.coordinator.rebalance.protocols", ConfigType::List { valid: &["consumer", "classic", "share", "streams"], empty: false })
        .default("classic,consumer,streams")
        .doc("This configuration is deprecated and will be removed in Kafka 5.0. The list of enabled rebalance protocols. In Kafka 5.0, all protocols will always be enabled and cannot be disabled via this configuration. Use feature versions (group.version, streams.version, share.version) managed by kafka-features.sh instead."),
    def("group.coordinator.threads", int(1))
        .default("4")
        .doc("The number of threads used by the group coordinator for processing requests."),
    def("group.initial.rebalance.delay.ms", int(i32::MIN))
        .default("3000")
        .doc("The amount of time the group coordinator will wait for more consumers to join a new group before performing the first rebalance."),
    def("group.max.session.timeout.ms", int(i32::MIN))
        .default("1800000")
        .doc("The maximum allowed session timeout for registered consumers."),
    def("group.max.size", int(1))
        .default("2147483647")
        .doc("The maximum number of consumers that a single consumer group can accommodate."),
    def("group.min.session.timeout.ms", int(i32::MIN))
        .default("6000")
        .doc("The minimum allowed session timeout for registered consumers."),
    def("group.share.assignors", NON_EMPTY_LIST)
        .default("simple")
        .doc("The server-side assignors as a list of either names for built-in assignors or full class names for custom assignors. The list must contain only a single entry which is used by all groups. The supported built-in assignors are: simple."),
    def("group.share.delivery.count.limit", int_range(2, 10))
        .default("5")
        .doc("The maximum number of delivery attempts for a record delivered to a share group."),
    def("group.share.dlq.manager.class.name", STRING)
        .default("org.apache.kafka.server.share.dlq.DefaultShareGroupDLQManager")
        .internal()
        .doc("The fully qualified name of a class which implements the <code>org.apache.kafka.server.share.dlq.ShareGroupDLQManager</code> interface."),
    def("group.share.heartbeat.interval.ms", int(1))
        .default("5000")
        .doc("The heartbeat interval given to the members of a share group."),
    def("group.share.initialize.retry.interval.ms", int(1))
        .default("30000")
        .doc("Time elapsed before retrying initialize share group state request. If below offsets.commit.timeout.ms, then value of offsets.commit.timeout.ms is used.")
        .internal(),
    def("group.share.max.assignment.interval.ms", int(0))
        .default("15000")
        .doc("The maximum interval between assignment updates for a share group."),
    def("group.share.max.delivery.count.limit", int_range(5, 25))
        .default("10")
        .doc("The maximum value of a group configuration for the maximum number of delivery attempts for a record delivered to a share group."),
    def("group.share.max.heartbeat.interval.ms", int(1))
        .default("15000")
        .doc("The maximum heartbeat interval for share group members."),
    def("group.share.max.partition.max.record.locks", int_range(2000, 10000))
        .default("4000")
        .doc("The maximum value of a group configuration for the record lock limit per share-partition."),
    def("group.share.max.record.lock.duration.ms", int_range(30000, 3600000))
        .default("60000")
        .doc("The maximum value of a group configuration for record acquisition lock duration in milliseconds."),
    def("group.share.max.session.timeout.ms", int(1))
        .default("60000")
        .doc("The maximum allowed session timeout for share group members."),
    def("group.share.max.share.sessions", int(1))
        .default("2000")
        .doc("The maximum number of share sessions per broker."),
    def("group.share.max.size", int_range(1, 1000))
        .default("200")
        .doc("The maximum number of members that a single share group can accommodate."),
    def("group.share.min.assignment.interval.ms", int(0))
        .default("0")
        .doc("The minimum interval between assignment updates for a share group."),
    def("group.share.min.delivery.count.limit", int_range(2, 5))
        .default("2")
        .doc("The minimum value of a group configuration for the maximum number of delivery attempts for a record delivered to a share group."),
    def("group.share.min.heartbeat.interval.ms", int(1))
        .default("5000")
        .doc("The minimum heartbeat interval for share group members."),
    def("group.share.min.partition.max.record.locks", int_range(100, 2000))
        .default("100")
        .doc("The minimum value of a group configuration for the record lock limit per share-partition."),
    def("group.share.min.record.lock.duration.ms", int_range(1000, 30000))
        .default("15000")
        .doc("The minimum value of a group configuration for record acquisition lock duration in milliseconds."),
    def("group.share.min.session.timeout.ms", int(1))
        .default("45000")
        .doc("The minimum allowed session timeout for share group members."),
    def("group.share.partition.max.record.locks", int_range(100, 10000))
        .default("2000")
        .doc("Share-group record lock limit per share-partition."),
    def("group.share.persister.class.name", STRING)
        .default("org.apache.kafka.server.share.persister.DefaultStatePersister")
        .internal()
        .doc("The fully qualified name of a class which implements the <code>org.apache.kafka.server.share.Persister</code> interface."),
    def("group.share.record.lock.duration.ms", int_range(1000, 3600000))
        .default("30000")
        .doc("The record acquisition lock duration in milliseconds for share groups."),
    def("group.share.session.timeout.ms", int(1))
        .default("45000")
        .doc("The timeout to detect client failures when using the share group protocol."),
    def("group.streams.acceptable.recovery.lag", long(0))
        .default("10000")
        .internal()
        .doc("The maximum acceptable lag (number of offsets to catch up) for a client to be considered caught-up enough to receive an active task assignment."),
    def("group.streams.assignors", NON_EMPTY_LIST)
        .default("sticky")
        .doc("The server side task assignors for streams groups as a list of either names for built-in assignors or fully qualified class names for custom assignors. The first one in the list is considered as the default assignor to be used in the case where the streams group does not specify an assignor."),
    def("group.streams.max.assignment.interval.ms", int(0))
        .default("15000")
        .doc("The maximum interval between assignment updates for a streams group."),
    def("group.streams.max.warmup.replicas", int(0))
        .default("20")
        .internal()
        .doc("The maximum allowed value for the group-level configuration of streams.num.warmup.replicas"),
    def("group.streams.min.assignment.interval.ms", int(0))
        .default("0")
        .doc("The minimum interval between assignment updates for a streams group."),
    def("group.streams.heartbeat.interval.ms", int(1))
        .default("5000")
        .doc("The heartbeat interval given to the members."),
    def("group.streams.initial.rebalance.delay.ms", int(0))
        .default("3000")
        .doc("The amount of time the group coordinator will wait for more streams clients to join a new group before performing the first rebalance. A longer delay means potentially fewer rebalances."),
    def("group.streams.max.heartbeat.interval.ms", int(1))
        .default("15000")
        .doc("The maximum allowed value for the group-level configuration of streams.heartbeat.interval.ms"),
    def("group.streams.max.session.timeout.ms", int(1))
        .default("60000")
        .doc("The maximum allowed value for the group-level configuration of streams.session.timeout.ms"),
    def("group.streams.max.size", int(1))
        .default("2147483647")
        .doc("The maximum number of streams clients that a single streams group can accommodate."),
    def("group.streams.max.standby.replicas", int(0))
        .default("2")
        .doc("The maximum allowed value for the group-level configuration of streams.num.standby.replicas"),
    def("group.streams.min.heartbeat.interval.ms", int(1))
        .default("5000")
        .doc("The minimum allowed value for the group-level configuration of streams.heartbeat.interval.ms"),
    def("group.streams.min.session.timeout.ms", int(1))
        .default("45000")
        .doc("The minimum allowed value for the group-level configuration of streams.session.timeout.ms"),
    def("group.streams.min.task.offset.interval.ms", int(1))
        .default("15000")
        .internal()
        .doc("The minimum allowed value for the group-level configuration of streams.task.offset.interval.ms"),
    def("group.streams.num.standby.replicas", int(0))
        .default("0")
        .doc("The number of standby replicas for each task."),
    def("group.streams.num.warmup.replicas", int(0))
        .default("2")
        .internal()
        .doc("The maximum number of warmup task replicas."),
    def("group.streams.rack.aware.assignment.tags", ANY_LIST)
        .default("")
        .doc("List of client tag keys used to distribute standby replicas across Kafka Streams instances. When configured, and the used broker-side assignor supports it, it will make a best-effort to distribute standby tasks over each client tag dimension."),
    def("group.streams.session.timeout.ms", int(1))
        .default("45000")
        .doc("The timeout to detect client failures when using the streams group protocol."),
    def("group.streams.task.offset.interval.ms", int(1))
        .default("60000")
        .internal()
        .doc("The interval in which the warmup task changelog offsets on a client are updated on the broker. The offsets are sent with the next heartbeat after this time has passed."),
    def("group.streams.topology.description.plugin.class", ConfigType::Class)
        .doc("The fully qualified class name of a StreamsGroupTopologyDescriptionPlugin implementation. When not set, the feature is disabled."),
    def("initial.broker.registration.timeout.ms", int(i32::MIN))
        .default("60000")
        .doc("When initially registering with the controller quorum, the number of milliseconds to wait before declaring failure and exiting the broker process."),
    def("inter.broker.listener.name", STRING)
        .doc("Name of listener used for communication between brokers."),
    def("internal.metadata.delete.delay.millis", long(i64::MIN))
        .default("60000")
        .internal()
        .doc("The amount of time to wait before deleting a file from the filesystem, only for testing."),
    def("internal.metadata.log.segment.bytes", int(i32::MIN))
        .internal()
        .doc("The maximum size of a single metadata log file, only for testing."),
    def("internal.metadata.max.batch.size.in.bytes", int(i32::MIN))
        .default("8388608")
        .internal()
        .doc("The largest record batch size allowed in the metadata log, only for testing."),
    def("kafka.metrics.polling.interval.secs", int(1))
        .default("10")
        .doc("The metrics polling interval (in seconds) which can be used in kafka.metrics.reporters implementations."),
    def("kafka.metrics.reporters", ANY_LIST)
        .default("")
        .doc("A list of classes to use as Yammer metrics custom reporters. The reporters should implement <code>kafka.metrics.KafkaMetricsReporter</code> trait."),
    def("leader.imbalance.check.interval.seconds", long(1))
        .default("300")
        .doc("The frequency with which the partition rebalance check is triggered by the controller"),
    def("listeners", NON_EMPTY_LIST)
        .default("PLAINTEXT://:9092")
        .doc("Listener List - Comma-separated list of URIs we will listen on and the listener names."),
    def("log.cleaner.enable", BOOLEAN)
        .default("true")
        .doc("Enable the log cleaner process to run on the server. Should be enabled if using any topics with a cleanup.policy=compact including the internal offsets topic."),
    def("log.dir", NON_EMPTY_LIST)
        .default("/tmp/kafka-logs")
        .doc("The directory in which the log data is kept (supplemental for log.dirs property)"),
    def("log.dir.failure.timeout.ms", long(1))
        .default("30000")
        .doc("If the broker is unable to successfully communicate to the controller that some log directory has failed for longer than this time, the broker will fail and shut down."),
    def("log.dirs", NON_EMPTY_LIST)
        .doc("A comma-separated list of the directories where the log data is stored. If not set, the value in log.dir is used."),
    def("log.flush.offset.checkpoint.interval.ms", int(0))
        .default("60000")
        .doc("The frequency with which we update the persistent record of the last flush which acts as the log recovery point."),
    def("log.flush.scheduler.interval.ms", long(i64::MIN))
        .default(LONG_MAX)
        .doc("The frequency in ms that the log flusher checks whether any log needs to be flushed to disk"),
    def("log.flush.start.offset.checkpoint.interval.ms", int(0))
        .default("60000")
        .doc("The frequency with which we update the persistent record of log start offset"),
    def("log.initial.task.delay.ms", long(0))
        .default("30000")
        .internal()
        .doc("The initial task delay in millisecond when initializing tasks in LogManager. This should be used for testing only."),
    def("log.retention.check.interval.ms", long(1))
        .default("300000")
        .doc("The frequency in milliseconds that the log cleaner checks whether any log is eligible for deletion"),
    def("log.retention.hours", int(i32::MIN))
        .default("168")
        .doc("The number of hours to keep a log file before deleting it (in hours), tertiary to log.retention.ms property"),
    def("log.retention.minutes", int(i32::MIN))
        .doc("The number of minutes to keep a log file before deleting it (in minutes), secondary to log.retention.ms property. If not set, the value in log.retention.hours is used"),
    def("log.roll.hours", int(1))
        .default("168")
        .doc("The maximum time before a new log segment is rolled out (in hours), secondary to log.roll.ms property"),
    def("log.roll.jitter.hours", int(0))
        .default("0")
        .doc("The maximum jitter to subtract from logRollTimeMillis (in hours), secondary to log.roll.jitter.ms property"),
    def("log.segment.idle.close.ms", long(0))
        .default("600000")
        .doc("kraftd's own (Kafka has none): a segment file handle unused this long is closed, and reopened on the next read or append."),
    def("log.segment.open.files.max", int(1))
        .default("10000")
        .doc("kraftd's own (Kafka has none): the most segment files the process keeps open, all partitions together; the least recently used is closed first."),
    def("max.incremental.fetch.session.cache.slots", int(0))
        .default("1000")
        .doc("The maximum number of total incremental fetch sessions that we will maintain. FetchSessionCache is sharded into 8 shards and the limit is equally divided among all shards. Sessions are allocated to each shard in round-robin. Only entries within a shard are considered eligible for eviction."),
    def("max.request.partition.size.limit", int(1))
        .default("2000")
        .doc("The maximum number of partitions can be served in one request."),
    def("metadata.log.dir", STRING)
        .doc("This configuration determines where we put the metadata log. If it is not set, the metadata log is placed in the first log directory from log.dirs."),
    def("metadata.log.max.record.bytes.between.snapshots", long(1))
        .default("20971520")
        .doc("This is the maximum number of bytes in the log between the latest snapshot and the high-watermark needed before generating a new snapshot. The default value is 20971520. To generate snapshots based on the time elapsed, see the <code>metadata.log.max.snapshot.interval.ms</code> configuration."),
    def("metadata.log.max.snapshot.interval.ms", long(0))
        .default("3600000")
        .doc("This is the maximum number of milliseconds to wait to generate a snapshot if there are committed records in the log that are not included in the latest snapshot. A value of zero disables time based snapshot generation. The default value is 3600000."),
    def("metadata.log.segment.bytes", int(8388608))
        .default("1073741824")
        .doc("The maximum size of a single metadata log file."),
    def("metadata.log.segment.ms", long(i64::MIN))
        .default("604800000")
        .doc("The maximum time before a new metadata log file is rolled out (in milliseconds)."),
    def("metadata.max.idle.interval.ms", int(0))
        .default("500")
        .doc("This configuration controls how often the active controller should write no-op records to the metadata partition. If the value is 0, no-op records are not appended to the metadata partition. The default value is 500"),
    def("metadata.max.retention.bytes", long(i64::MIN))
        .default("104857600")
        .doc("The maximum combined size of the metadata log and snapshots before deleting old snapshots and log files. Since at least one snapshot must exist before any logs can be deleted, this is a soft limit."),
    def("metadata.max.retention.ms", long(i64::MIN))
        .default("604800000")
        .doc("The number of milliseconds to keep a metadata log file or snapshot before deleting it. Since at least one snapshot must exist before any logs can be deleted, this is a soft limit."),
    def("metrics.num.samples", int(1))
        .default("2")
        .doc("The number of samples maintained to compute metrics."),
    def("metrics.recording.level", STRING)
        .default("INFO")
        .doc("The highest recording level for metrics. It has three levels for recording metrics - info, debug, and trace. INFO level records only essential metrics necessary for monitoring system performance and health."),
    def("metrics.sample.window.ms", long(1))
        .default("30000")
        .doc("The window of time a metrics sample is computed over."),
    def("node.id", int(0))
        .doc("The node ID associated with the roles this process is playing when process.roles is non-empty."),
    def("num.partitions", int(1))
        .default("1")
        .doc("The default number of log partitions per topic"),
    def("num.replica.alter.log.dirs.threads", int(i32::MIN))
        .doc("The number of threads that can move replicas between log directories, which may include disk I/O. The default value is equal to the number of directories specified in the <code>log.dir</code> or <code>log.dirs</code> configuration property."),
    def("offset.metadata.max.bytes", int(i32::MIN))
        .default("4096")
        .doc("The maximum size for a metadata entry associated with an offset commit."),
    def("offsets.commit.timeout.ms", int(1))
        .default("5000")
        .doc("Offset commit will be delayed until all replicas for the offsets topic receive the commit or this timeout is reached."),
    def("offsets.load.buffer.size", int(1))
        .default("5242880")
        .doc("Batch size for reading from the offsets segments when loading group metadata into the cache (soft-limit, overridden if records are too large)."),
    def("offsets.retention.check.interval.ms", long(1))
        .default("600000")
        .doc("Frequency at which to check for stale offsets"),
    def("offsets.retention.minutes", int(1))
        .default("10080")
        .doc("For subscribed consumers, committed offset of a specific partition will be expired and discarded after this period of time after the group becomes empty."),
    def("offsets.topic.compression.codec", int(i32::MIN))
        .default("0")
        .doc("Compression codec for the offsets topic - compression may be used to achieve \"atomic\" commits."),
    def("offsets.topic.num.partitions", int(1))
        .default("50")
        .doc("The number of partitions for the offset commit topic (should not change after deployment)."),
    def("offsets.topic.replication.factor", ConfigType::Short { min: 1 })
        .default("3")
        .doc("The replication factor for the offsets topic (set higher to ensure availability)."),
    def("offsets.topic.segment.bytes", int(1))
        .default("104857600")
        .doc("The offsets topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads."),
    def("process.roles", ConfigType::List { valid: &["broker", "controller"], empty: false })
        .doc("The roles that this process plays: 'broker', 'controller', or 'broker,controller' if it is both."),
    def("producer.id.expiration.check.interval.ms", int(1))
        .default("600000")
        .internal()
        .doc("The interval at which to remove producer IDs that have expired due to <code>producer.id.expiration.ms</code> passing."),
    def("producer.purgatory.purge.interval.requests", int(i32::MIN))
        .default("1000")
        .doc("The purge interval (in number of requests) of the producer request purgatory"),
    def("queued.max.request.bytes", long(i64::MIN))
        .default("-1")
        .doc("The number of queued bytes allowed before no more requests are read"),
    def("queued.max.requests", int(1))
        .default("500")
        .doc("The number of queued requests allowed for data-plane, before blocking the network threads"),
    def("remote.log.index.file.cache.ttl.ms", long(-1))
        .default("900000")
        .internal()
        .doc("The maximum time in milliseconds an index file entry can remain in the cache after its last access. After this duration, the entry will be evicted even if there is available space."),
    def("remote.log.manager.copy.quota.window.num", int(1))
        .default("11")
        .doc("The number of samples to retain in memory for remote copy quota management. The default value is 11, which means there are 10 whole windows + 1 current window."),
    def("remote.log.manager.copy.quota.window.size.seconds", int(1))
        .default("1")
        .doc("The time span of each sample for remote copy quota management. The default value is 1 second."),
    def("remote.log.manager.fetch.quota.window.num", int(1))
        .default("11")
        .doc("The number of samples to retain in memory for remote fetch quota management. The default value is 11, which means there are 10 whole windows + 1 current window."),
    def("remote.log.manager.fetch.quota.window.size.seconds", int(1))
        .default("1")
        .doc("The time span of each sample for remote fetch quota management. The default value is 1 second."),
    def("remote.log.manager.task.interval.ms", long(1))
        .default("30000")
        .doc("Interval at which remote log manager runs the scheduled tasks like copy segments, and clean up remote log segments."),
    def("remote.log.manager.task.retry.backoff.max.ms", long(1))
        .default("30000")
        .internal()
        .doc("The maximum amount of time in milliseconds to wait when the request is retried again. The retry duration will increase exponentially for each request failure up to this maximum wait interval."),
    def("remote.log.manager.task.retry.backoff.ms", long(1))
        .default("500")
        .internal()
        .doc("The initial amount of wait in milliseconds before the request is retried again."),
    def("remote.log.manager.task.retry.jitter", ConfigType::Double { min: 0.0, max: 0.5 })
        .default("0.2")
        .internal()
        .doc("The value used in defining the range for computing random jitter factor. It is applied to the effective exponential term for computing the resultant retry backoff interval. This will avoid thundering herds of requests."),
    def("remote.log.manager.thread.pool.size", int(1))
        .default("2")
        .doc("Size of the thread pool used in scheduling follower tasks to read the highest-uploaded remote-offset for follower partitions. This config is deprecated since 4.2, please use <code>remote.log.manager.follower.thread.pool.size</code> instead."),
    def("remote.log.metadata.custom.metadata.max.bytes", int(0))
        .default("128")
        .doc("The maximum size of custom metadata in bytes that the broker should accept from a remote storage plugin."),
    def("remote.log.metadata.manager.class.name", NON_EMPTY_STRING)
        .default("org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager")
        .doc("Fully qualified class name of <code>RemoteLogMetadataManager</code> implementation."),
    def("remote.log.metadata.manager.class.path", STRING)
        .doc("Class path of the <code>RemoteLogMetadataManager</code> implementation. If specified, the RemoteLogMetadataManager implementation and its dependent libraries will be loaded by a dedicated classloader which searches this class path before the Kafka broker class path."),
    def("remote.log.metadata.manager.impl.prefix", NON_EMPTY_STRING)
        .default("rlmm.config.")
        .doc("Prefix used for properties to be passed to RemoteLogMetadataManager implementation. For example this value can be <code>rlmm.config.</code>."),
    def("remote.log.metadata.manager.listener.name", NON_EMPTY_STRING)
        .doc("Listener name of the local broker to which it should get connected if needed by RemoteLogMetadataManager implementation."),
    def("remote.log.reader.max.pending.tasks", int(1))
        .default("100")
        .doc("Maximum remote log reader thread pool task queue size. If the task queue is full, fetch requests are served with an error."),
    def("remote.log.storage.manager.class.name", NON_EMPTY_STRING)
        .doc("Fully qualified class name of <code>RemoteStorageManager</code> implementation."),
    def("remote.log.storage.manager.class.path", STRING)
        .doc("Class path of the <code>RemoteStorageManager</code> implementation. If specified, the RemoteStorageManager implementation and its dependent libraries will be loaded by a dedicated classloader which searches this class path before the Kafka broker class path."),
    def("remote.log.storage.manager.impl.prefix", NON_EMPTY_STRING)
        .default("rsm.config.")
        .doc("Prefix used for properties to be passed to RemoteStorageManager implementation. For example this value can be <code>rsm.config.</code>."),
    def("remote.log.storage.system.enable", BOOLEAN)
        .default("false")
        .doc("Whether to enable tiered storage functionality in a broker or not. When it is true broker starts all the services required for the tiered storage functionality."),
    def("replica.fetch.backoff.ms", int(0))
        .default("1000")
        .doc("The amount of time to sleep when fetch partition error occurs."),
    def("replica.fetch.max.bytes", int(0))
        .default("1048576")
        .doc("The number of bytes of messages to attempt to fetch for each partition. This is not an absolute maximum, if the first record batch in the first non-empty partition of the fetch is larger than this value, the record batch will still be returned to ensure that progress can be made."),
    def("replica.fetch.min.bytes", int(i32::MIN))
        .default("1")
        .doc("Minimum bytes expected for each fetch response. If not enough bytes, wait up to <code>replica.fetch.wait.max.ms</code> (broker config)."),
    def("replica.fetch.response.max.bytes", int(0))
        .default("10485760")
        .doc("Maximum bytes expected for the entire fetch response. Records are fetched in batches, and if the first record batch in the first non-empty partition of the fetch is larger than this value, the record batch will still be returned to ensure that progress can be made."),
    def("replica.fetch.wait.max.ms", int(i32::MIN))
        .default("500")
        .doc("The maximum wait time for each fetcher request issued by follower replicas. This value should always be less than the replica.lag.time.max.ms at all times to prevent frequent shrinking of ISR for low throughput topics"),
    def("replica.high.watermark.checkpoint.interval.ms", long(i64::MIN))
        .default("5000")
        .doc("The frequency with which the high watermark is saved out to disk"),
    def("replica.lag.time.max.ms", long(i64::MIN))
        .default("30000")
        .doc("If a follower hasn't sent any fetch requests or hasn't consumed up to the leader's log end offset for at least this time, the leader will remove the follower from ISR"),
    def("replica.selector.class", STRING)
        .doc("The fully qualified class name that implements ReplicaSelector. This is used by the broker to find the preferred read replica. By default, we use an implementation that returns the leader."),
    def("replica.socket.receive.buffer.bytes", int(i32::MIN))
        .default("65536")
        .doc("The socket receive buffer for network requests to the leader for replicating data"),
    def("replica.socket.timeout.ms", int(i32::MIN))
        .default("30000")
        .doc("The socket timeout for network requests. Its value should be at least replica.fetch.wait.max.ms"),
    def("request.timeout.ms", int(i32::MIN))
        .default("30000")
        .doc("The configuration controls the maximum amount of time the client will wait for the response of a request. If the response is not received before the timeout elapses the client will resend the request if necessary or fail the request if retries are exhausted."),
    def("server.max.startup.time.ms", long(0))
        .default("9223372036854775807")
        .internal()
        .doc("The maximum number of milliseconds we will wait for the server to come up. By default there is no limit. This should be used for testing only."),
    def("share.coordinator.append.linger.ms", int(-1))
        .default("-1")
        .doc("The duration in milliseconds that the share coordinator will wait for writes to accumulate before flushing them to disk. Set to -1 for an adaptive linger time that minimizes latency based on the workload."),
    def("share.coordinator.cold.partition.snapshot.interval.ms", int(1))
        .default("300000")
        .internal()
        .doc("The duration in milliseconds that the share coordinator will wait between force snapshotting share partitions which are not being updated."),
    def("share.coordinator.load.buffer.size", int(1))
        .default("5242880")
        .doc("Batch size for reading from the share-group state topic when loading state information into the cache (soft-limit, overridden if records are too large)."),
    def("share.coordinator.snapshot.update.records.per.snapshot", int_range(0, 500))
        .default("500")
        .doc("The number of update records the share coordinator writes between snapshot records."),
    def("share.coordinator.state.topic.compression.codec", int(i32::MIN))
        .default("0")
        .doc("Compression codec for the share-group state topic."),
    def("share.coordinator.state.topic.min.isr", ConfigType::Short { min: 1 })
        .default("2")
        .doc("Overridden min.insync.replicas for the share-group state topic."),
    def("share.coordinator.state.topic.num.partitions", int(1))
        .default("50")
        .doc("The number of partitions for the share-group state topic (should not change after deployment)."),
    def("share.coordinator.state.topic.prune.interval.ms", int(1))
        .default("300000")
        .internal()
        .doc("The duration in milliseconds that the share coordinator will wait between pruning eligible records in share-group state topic."),
    def("share.coordinator.state.topic.replication.factor", ConfigType::Short { min: 1 })
        .default("3")
        .doc("Replication factor for the share-group state topic. Topic creation will fail until the cluster size meets this replication factor requirement."),
    def("share.coordinator.state.topic.segment.bytes", int(1))
        .default("104857600")
        .doc("The log segment size for the share-group state topic."),
    def("share.coordinator.threads", int(1))
        .default("1")
        .doc("The number of threads used by the share coordinator."),
    def("share.coordinator.write.timeout.ms", int(1))
        .default("5000")
        .doc("The duration in milliseconds that the share coordinator will wait for all replicas of the share-group state topic to receive a write."),
    def("share.fetch.purgatory.purge.interval.requests", int(i32::MIN))
        .default("1000")
        .doc("The purge interval (in number of requests) of the share fetch request purgatory"),
    def("socket.connection.setup.timeout.max.ms", long(i64::MIN))
        .default("30000")
        .doc("The maximum amount of time the client will wait for the socket connection to be established. The connection setup timeout will increase exponentially for each consecutive connection failure up to this maximum."),
    def("socket.connection.setup.timeout.ms", long(i64::MIN))
        .default("10000")
        .doc("The amount of time the client will wait for the socket connection to be established. If the connection is not built before the timeout elapses, clients will close the socket channel."),
    def("socket.listen.backlog.size", int(1))
        .default("50")
        .doc("The maximum number of pending connections on the socket. In Linux, you may also need to configure <code>somaxconn</code> and <code>tcp_max_syn_backlog</code> kernel parameters accordingly to make the configuration takes effect."),
    def("socket.receive.buffer.bytes", int(i32::MIN))
        .default("102400")
        .doc("The SO_RCVBUF buffer of the socket server sockets. If the value is -1, the OS default will be used."),
    def("socket.request.max.bytes", int(1))
        .default("104857600")
        .doc("The maximum number of bytes in a socket request"),
    def("socket.send.buffer.bytes", int(i32::MIN))
        .default("102400")
        .doc("The SO_SNDBUF buffer of the socket server sockets. If the value is -1, the OS default will be used."),
    def("telemetry.max.bytes", int(1))
        .default("1048576")
        .doc("The maximum size (after compression if compression is used) of telemetry metrics pushed from a client to the broker. The default value is 1048576 (1 MB)."),
    def("transaction.abort.timed.out.transaction.cleanup.interval.ms", int(1))
        .default("10000")
        .doc("The interval at which to rollback transactions that have timed out"),
    def("transaction.max.timeout.ms", int(1))
        .default("900000")
        .doc("The maximum allowed timeout for transactions. If a client’s requested transaction time exceed this, then the broker will return an error in InitProducerIdRequest. This prevents a client from too large of a timeout, which can stall consumers reading from topics included in the transaction."),
    def("transaction.remove.expired.transaction.cleanup.interval.ms", int(1))
        .default("3600000")
        .doc("The interval at which to remove transactions that have expired due to <code>transactional.id.expiration.ms</code> passing"),
    def("transaction.state.log.load.buffer.size", int(1))
        .default("5242880")
        .doc("Batch size for reading from the transaction log segments when loading producer ids and transactions into the cache (soft-limit, overridden if records are too large)."),
    def("transaction.state.log.min.isr", int(1))
        .default("2")
        .doc("The minimum number of replicas that must acknowledge a write to transaction topic in order to be considered successful."),
    def("transaction.state.log.num.partitions", int(1))
        .default("50")
        .doc("The number of partitions for the transaction topic (should not change after deployment)."),
    def("transaction.state.log.replication.factor", ConfigType::Short { min: 1 })
        .default("3")
        .doc("The replication factor for the transaction topic (set higher to ensure availability). Internal topic creation will fail until the cluster size meets this replication factor requirement."),
    def("transaction.state.log.segment.bytes", int(1))
        .default("104857600")
        .doc("The transaction topic segment bytes should be kept relatively small in order to facilitate faster log compaction and cache loads"),
    def("transaction.two.phase.commit.enable", BOOLEAN)
        .default("false")
        .doc("Allow participation in Two-Phase Commit (2PC) transactions with an external transaction coordinator"),
    def("transactional.id.expiration.ms", int(1))
        .default("604800000")
        .doc("The time in ms that the transaction coordinator will wait without receiving any transaction status updates for the current transaction before expiring its transactional id. Transactional IDs will not expire while a the transaction is still ongoing."),
    def("unclean.leader.election.interval.ms", long(1))
        .default("300000")
        .internal()
        .doc("The frequency with which the controller checks if it should perform an unclean leader election for leaderless partitions."),
    def("unstable.api.versions.enable", BOOLEAN)
        .default("false")
        .internal()
        .doc(""),
    def("unstable.feature.versions.enable", BOOLEAN)
        .default("false")
        .internal()
        .doc(""),
];

/// Kafka's `ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS`: for each topic config with a
/// broker-wide default, the broker configs it falls back to, highest priority first. Topic
/// configs absent here (`remote.storage.enable`, the throttled replica lists, ...) have no
/// broker synonym and take their `LogConfig` default.
pub const TOPIC_CONFIG_SYNONYMS: &[(&str, &[BrokerSynonym])] = &[
    ("cleanup.policy", &[syn("log.cleanup.policy")]),
    ("compression.gzip.level", &[syn("compression.gzip.level")]),
    ("compression.lz4.level", &[syn("compression.lz4.level")]),
    ("compression.type", &[syn("compression.type")]),
    ("compression.zstd.level", &[syn("compression.zstd.level")]),
    (
        "delete.retention.ms",
        &[syn("log.cleaner.delete.retention.ms")],
    ),
    (
        "file.delete.delay.ms",
        &[syn("log.segment.delete.delay.ms")],
    ),
    ("flush.messages", &[syn("log.flush.interval.messages")]),
    (
        "flush.ms",
        &[
            syn("log.flush.interval.ms"),
            syn("log.flush.scheduler.interval.ms"),
        ],
    ),
    ("index.interval.bytes", &[syn("log.index.interval.bytes")]),
    ("local.retention.bytes", &[syn("log.local.retention.bytes")]),
    ("local.retention.ms", &[syn("log.local.retention.ms")]),
    (
        "max.compaction.lag.ms",
        &[syn("log.cleaner.max.compaction.lag.ms")],
    ),
    ("max.message.bytes", &[syn("message.max.bytes")]),
    (
        "message.timestamp.after.max.ms",
        &[syn("log.message.timestamp.after.max.ms")],
    ),
    (
        "message.timestamp.before.max.ms",
        &[syn("log.message.timestamp.before.max.ms")],
    ),
    (
        "message.timestamp.type",
        &[syn("log.message.timestamp.type")],
    ),
    (
        "min.cleanable.dirty.ratio",
        &[syn("log.cleaner.min.cleanable.ratio")],
    ),
    (
        "min.compaction.lag.ms",
        &[syn("log.cleaner.min.compaction.lag.ms")],
    ),
    ("min.insync.replicas", &[syn("min.insync.replicas")]),
    ("preallocate", &[syn("log.preallocate")]),
    ("retention.bytes", &[syn("log.retention.bytes")]),
    (
        "retention.ms",
        &[
            syn("log.retention.ms"),
            syn_minutes("log.retention.minutes"),
            syn_hours("log.retention.hours"),
        ],
    ),
    ("segment.bytes", &[syn("log.segment.bytes")]),
    ("segment.index.bytes", &[syn("log.index.size.max.bytes")]),
    (
        "segment.jitter.ms",
        &[
            syn("log.roll.jitter.ms"),
            syn_hours("log.roll.jitter.hours"),
        ],
    ),
    (
        "segment.ms",
        &[syn("log.roll.ms"), syn_hours("log.roll.hours")],
    ),
    (
        "unclean.leader.election.enable",
        &[syn("unclean.leader.election.enable")],
    ),
];

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

mod client_metrics;
mod group;
mod kafka_names;
mod throttled_replicas;
mod values;

pub use client_metrics::{
    client_metrics_config_def, parse_match_patterns, parse_subscription, validate_client_metrics,
    ClientMetricsConfigError, ClientMetricsSubscription, MatchPattern, ALL_SUBSCRIBED_METRICS,
    CLIENT_ID, CLIENT_INSTANCE_ID, CLIENT_METRICS_CONFIGS, CLIENT_SOFTWARE_NAME,
    CLIENT_SOFTWARE_VERSION, CLIENT_SOURCE_ADDRESS, CLIENT_SOURCE_PORT, INTERVAL_MS_CONFIG,
    INTERVAL_MS_DEFAULT, MATCH_CONFIG, METRICS_CONFIG,
};
pub use group::{
    group_config_synonym, GroupConfigBounds, GROUP_CONFIG_BOUNDS, STREAMS_ASSIGNORS_DEFAULT,
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
