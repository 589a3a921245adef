//! Kafka's topic configs (`TopicConfig`, validated as `LogConfig` validates them) and their
//! broker synonyms (`ServerTopicConfigSynonyms`): what CreateTopics and AlterConfigs accept on
//! a TOPIC resource, and where DescribeConfigs finds a topic config's broker-wide default.

use super::{
    def, int, int_range, long, BrokerSynonym, ConfigDef, ConfigType, ANY_LIST, BOOLEAN, LONG_MAX,
};

pub(super) const COMPRESSION_TYPES: &[&str] =
    &["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"];
pub(super) const CLEANUP_POLICIES: &[&str] = &["compact", "delete"];
pub(super) const TIMESTAMP_TYPES: &[&str] = &["CreateTime", "LogAppendTime"];

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
