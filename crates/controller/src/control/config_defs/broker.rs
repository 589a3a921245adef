//! The broker configs kraftd accepts dynamically, per broker or as the cluster default
//! (Kafka's `DynamicBrokerConfig` keys among `KafkaConfig`'s), with Kafka's types, defaults
//! and documentation.

use super::topic::{
    CLEANUP_POLICIES, COMPRESSION_GZIP_LEVEL, COMPRESSION_TYPES, MIN_SEGMENT_BYTES, TIMESTAMP_TYPES,
};
use super::{
    def, int, int_range, long, ConfigDef, ConfigType, Importance, UpdateMode, ANY_DOUBLE, ANY_LIST,
    BOOLEAN, LONG_MAX, STRING,
};

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
