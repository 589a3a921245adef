//! The broker configs kraftd reads only from the node's properties file (Kafka's
//! `KafkaConfig` keys that are not dynamic here), with Kafka's types, defaults and
//! documentation.

use super::{
    def, int, int_range, long, ConfigDef, ConfigType, ANY_LIST, BOOLEAN, LONG_MAX, NON_EMPTY_LIST,
    NON_EMPTY_STRING, STRING,
};

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
