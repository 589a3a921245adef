//! Whether kraftd acts on each config key it accepts ([`CONFIG_SUPPORT`]), so no setting is
//! silently ignored: honoured with Kafka's meaning, harmlessly without effect, or refused
//! unless it asks for Kafka's default; the checks CreateTopics, (Incremental)AlterConfigs
//! and start-up run against it; and the Markdown table `docs/configs.md` holds. The keys'
//! definitions (types, defaults, synonyms) are in [`super::config_defs`].

use super::config_defs::{
    ConfigDef, ConfigValueError, UpdateMode, BROKER_CONFIGS, GROUP_CONFIGS, INTERNAL_SEGMENT_BYTES,
    MIN_INTERNAL_SEGMENT_BYTES, STATIC_BROKER_CONFIGS, TOPIC_CONFIGS,
};
use super::security_checks::{broker_update_mode, check_sasl_mechanism_value, listener_key};
use super::security_configs::{SECURITY_CONFIGS, SECURITY_SUPPORT};

/// Where a config is set: on a topic, as a dynamic broker config (per broker or the cluster
/// default; also readable from the node's properties file), or only in the properties file.
/// The security configs ([`SECURITY_CONFIGS`]) are in the broker scopes by their update
/// mode: dynamic ones in [`ConfigScope::Broker`], read-only ones in
/// [`ConfigScope::StaticBroker`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ConfigScope {
    /// [`TOPIC_CONFIGS`].
    Topic,
    /// [`BROKER_CONFIGS`] and the dynamic [`SECURITY_CONFIGS`].
    Broker,
    /// [`STATIC_BROKER_CONFIGS`] and the read-only [`SECURITY_CONFIGS`].
    StaticBroker,
    /// [`GROUP_CONFIGS`]: set on one group (`ConfigResource` type GROUP).
    Group,
}

impl ConfigScope {
    /// The scope's definitions.
    pub fn defs(self) -> impl Iterator<Item = &'static ConfigDef> {
        let (table, security_dynamic): (&'static [ConfigDef], Option<bool>) = match self {
            ConfigScope::Topic => (TOPIC_CONFIGS, None),
            ConfigScope::Broker => (BROKER_CONFIGS, Some(true)),
            ConfigScope::StaticBroker => (STATIC_BROKER_CONFIGS, Some(false)),
            ConfigScope::Group => (GROUP_CONFIGS, None),
        };
        let security = SECURITY_CONFIGS.iter().filter(move |d| {
            security_dynamic
                .is_some_and(|dynamic| dynamic != (d.update == Some(UpdateMode::ReadOnly)))
        });
        table.iter().chain(security)
    }

    /// The scope's definition of `name`.
    pub fn def(self, name: &str) -> Option<&'static ConfigDef> {
        self.defs().find(|d| d.name == name)
    }

    fn label(self, name: &str) -> &'static str {
        match self {
            ConfigScope::Topic => "topic",
            ConfigScope::Broker => match broker_update_mode(name) {
                Some(UpdateMode::PerBroker) => "broker, dynamic per broker",
                Some(UpdateMode::PerListener) => "broker, dynamic per broker and listener",
                _ => "broker, dynamic",
            },
            ConfigScope::StaticBroker => "broker, static",
            ConfigScope::Group => "group",
        }
    }
}

/// What kraftd does with a config it accepts, so no setting is silently ignored: each key is
/// honoured with Kafka's meaning, harmlessly without effect, or refused unless it asks for
/// Kafka's default (which a client may set explicitly, as Kafka Connect and Streams do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Kafka's meaning, wherever it is set.
    Honoured,
    /// Kafka's meaning in the node's properties file; as a dynamic config only Kafka's
    /// default is accepted, because the running node does not re-read it.
    HonouredStatic,
    /// Accepted and stored (DescribeConfigs shows it) with no effect: it only tunes
    /// performance, or only matters with a feature kraftd refuses. Ignoring it loses no
    /// data, exposes none and changes nothing a client sees.
    NoEffect,
    /// Not supported: a value other than Kafka's default is refused with INVALID_CONFIG by
    /// CreateTopics, AlterConfigs and IncrementalAlterConfigs, and stops startup with one
    /// line when set in the node's properties file.
    RefusedUnlessDefault,
}

impl Support {
    fn label(self) -> &'static str {
        match self {
            Support::Honoured => "honoured",
            Support::HonouredStatic => {
                "honoured from the properties file; dynamically refused unless default"
            }
            Support::NoEffect => "accepted, no effect",
            Support::RefusedUnlessDefault => "refused unless default",
        }
    }
}

/// One key's [`Support`] in one scope, with where it takes effect or why it does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConfigSupport {
    pub scope: ConfigScope,
    pub name: &'static str,
    pub support: Support,
    pub note: &'static str,
}

pub(crate) const fn honoured(
    scope: ConfigScope,
    name: &'static str,
    note: &'static str,
) -> ConfigSupport {
    ConfigSupport {
        scope,
        name,
        support: Support::Honoured,
        note,
    }
}
pub(crate) const fn honoured_static(
    scope: ConfigScope,
    name: &'static str,
    note: &'static str,
) -> ConfigSupport {
    ConfigSupport {
        scope,
        name,
        support: Support::HonouredStatic,
        note,
    }
}
pub(crate) const fn no_effect(
    scope: ConfigScope,
    name: &'static str,
    note: &'static str,
) -> ConfigSupport {
    ConfigSupport {
        scope,
        name,
        support: Support::NoEffect,
        note,
    }
}
pub(crate) const fn refused(
    scope: ConfigScope,
    name: &'static str,
    note: &'static str,
) -> ConfigSupport {
    ConfigSupport {
        scope,
        name,
        support: Support::RefusedUnlessDefault,
        note,
    }
}

use ConfigScope::{Broker as B, Group as G, StaticBroker as S, Topic as T};

const REBALANCE: &str =
    "the active controller's periodic preferred-leader elections (QuorumController::tick)";
const CLEANER: &str = "the broker's log cleaner (replica/log_cleaner.rs)";
const CLEANER_LIVE: &str = "the broker's log cleaner (replica/log_cleaner.rs); a dynamic change restarts its threads with the new value, as Kafka's LogCleaner.reconfigure (LogCleanerReconfigurer)";
const LEVEL: &str = "re-compression (compression.type) uses fixed levels (gzip 6 and zstd 3 as Kafka's defaults; lz4 has one fast mode); a level only tunes size and speed";
const COMPRESSION: &str = "the leader re-compresses a batch in another codec into this one (partition/validator.rs); producer keeps it as sent";
const TIMESTAMPS: &str = "produce refuses a CreateTime record outside the window with INVALID_TIMESTAMP (partition/validator.rs)";
const LOCAL_RETENTION: &str = "tiered storage only; remote.storage.enable is refused, and Kafka ignores it too without tiered storage";
const SEGMENT: &str = "the log store's roll (segment.bytes / segment.ms / segment.index.bytes)";
const GROUPS: &str =
    "the broker's group coordinator (kraftd-coordinator's group/), from the properties file";
const SHARE_BOUNDS: &str =
    "bounds the broker default at start-up (Kafka's ShareGroupConfig.validate)";
const SHARE_GROUPS: &str = "the broker's group coordinator's share groups (kraftd-coordinator's group/share/), from the properties file";
const STREAMS_GROUPS: &str = "the broker's group coordinator's streams groups (kraftd-coordinator's group/streams/), from the properties file";
const SHARE_PARTITIONS: &str = "the share-partition leaders (share/share_partition_manager.rs), unless the group's share.* config overrides it";
const OFFSETS_TOPIC: &str =
    "__consumer_offsets as the broker creates it on first use (server/internal_topics.rs)";
const SHARE_COORDINATOR: &str =
    "the broker's share coordinator (kraftd-coordinator's share/), from the properties file";
const SHARE_STATE_TOPIC: &str =
    "__share_group_state as the broker creates it on first use (server/internal_topics.rs)";
const THROTTLE: &str = "replication throttling (replica/replication_quota.rs): the leader answers throttled partitions empty and the follower leaves them out of its fetches while over the rate";
const PER_GROUP_COORDINATOR: &str = "the group coordinator runs the group by it, clamped into the broker's group.* bounds (GroupCoordinatorShard::group_config, from the image's GROUP resources)";
const PER_GROUP_SHARE_PARTITIONS: &str = "the share-partition leaders run the group's share partitions by it (SharePartitionManager::group_settings, from the image's GROUP resources; the controller keeps it within the broker's group.share.* bounds)";
const DLQ: &str = "share groups' dead-letter queues (KIP-1191, share.version 2): the share-partition leader's DLQ writer (share/dlq.rs) reads it at each write";
const STREAMS: &str =
    "streams groups (KIP-1071) are not built: no streams group exists for it to apply to";
const OFFLOAD: &str = "kraftd computes assignments on the shard; offloading to a background thread only tunes performance";
const THREADS: &str = "kraftd runs this work as tokio tasks; a thread count only tunes performance";
const TIERED: &str = "tiered storage only; remote.log.storage.system.enable and remote.storage.enable are refused, and Kafka ignores it too without tiered storage";
const POLICY: &str =
    "kraftd loads no policy plugins: ignoring one would let through the changes it refuses";
const PLUGIN: &str = "kraftd loads no Java plugins: its own implementation is built in, and ignoring another would change what the plugin does";
const PURGATORY: &str =
    "kraftd removes a completed operation from its purgatory at once: there is nothing to purge";
const COORD_TUNING: &str = "the coordinator runtime (broker coordinator/runtime.rs) appends each write as it is handled; lingering and buffer reuse only tune throughput";
const METADATA_LOG: &str = "the metadata log's segments (crates/cli/src/node.rs)";
const METADATA_LOG_DELETE: &str = "kraftd deletes the metadata log below its latest snapshot at once (kraftd-raft driver/log.rs); a node that is behind fetches the snapshot, as Kafka's does past retention";
const REPORTERS: &str =
    "kraftd loads no Java metrics reporters: its metrics are served at /metrics (docs/metrics.md)";
const METRICS: &str = "kraftd's metrics at /metrics (docs/metrics.md) are sampled and recorded by their own rules; these only tune Kafka's Java metrics";
const LOAD_BUFFER: &str = "a coordinator loads its partition in read-sized chunks of kraftd's own; a buffer size only tunes loading speed";
const CODEC: &str = "kraftd writes coordinator records uncompressed; a codec only tunes their size (every reader decompresses any codec)";
const SOCKET: &str = "kraftd leaves socket buffers, the accept backlog and connection set-up to the operating system's defaults; they only tune throughput";
const FETCHER: &str =
    "the replica fetcher's requests to the leader (replica/fetcher/), from the properties file";
const TXN: &str = "the broker's transaction coordinator (kraftd-coordinator's transaction/), from the properties file";
const TXN_TOPIC: &str =
    "__transaction_state as the broker creates it on first use (server/internal_topics.rs)";
const TXN_VERIFY: &str = "a transactional produce is verified with its coordinator once per request (server/txn_verification.rs); a retry backoff only tunes latency";
const RAFT: &str = "the node's Raft client (kraftd-raft QuorumConfig), from the properties file";

/// The status of every key in [`TOPIC_CONFIGS`], [`BROKER_CONFIGS`] and
/// [`STATIC_BROKER_CONFIGS`] (one row each, checked by a test), as the table in
/// `docs/configs.md` renders it; the security configs' rows are [`SECURITY_SUPPORT`]
/// ([`support_rows`] has both).
pub const CONFIG_SUPPORT: &[ConfigSupport] = &[
    // Topic configs.
    honoured(T, "cleanup.policy", CLEANER),
    no_effect(T, "compression.gzip.level", LEVEL),
    no_effect(T, "compression.lz4.level", LEVEL),
    honoured(T, "compression.type", COMPRESSION),
    no_effect(T, "compression.zstd.level", LEVEL),
    honoured(T, "delete.retention.ms", CLEANER),
    honoured(T, "errors.deadletterqueue.group.enable", DLQ),
    no_effect(T, "file.delete.delay.ms", "a segment leaves the log at once and its files are removed then; a read already planned keeps its open file, so clients see what Kafka's delay gives them"),
    honoured(T, "flush.messages", "the log store flushes at the append that reaches it"),
    honoured(T, "flush.ms", "checked at each append; Kafka's periodic flusher is off by default (log.flush.scheduler.interval.ms)"),
    honoured(T, "follower.replication.throttled.replicas", THROTTLE),
    honoured(T, "index.interval.bytes", "the log store's offset index"),
    honoured(T, "internal.segment.bytes", "the log store's roll, in place of segment.bytes and without its 1 MiB floor (Kafka's testing-only override)"),
    honoured(T, "leader.replication.throttled.replicas", THROTTLE),
    no_effect(T, "local.retention.bytes", LOCAL_RETENTION),
    no_effect(T, "local.retention.ms", LOCAL_RETENTION),
    honoured(T, "max.compaction.lag.ms", CLEANER),
    refused(T, "max.decompressed.message.bytes", "produce, compaction and timestamp lookups do not bound a record's decompressed size"),
    honoured(T, "max.message.bytes", "produce refuses a larger batch with MESSAGE_TOO_LARGE"),
    honoured(T, "message.timestamp.after.max.ms", TIMESTAMPS),
    honoured(T, "message.timestamp.before.max.ms", TIMESTAMPS),
    honoured(T, "message.timestamp.type", "LogAppendTime stamps each batch at append and in the produce response"),
    honoured(T, "min.cleanable.dirty.ratio", CLEANER),
    honoured(T, "min.compaction.lag.ms", CLEANER),
    honoured(T, "min.insync.replicas", "acks=all produce, the HW and KIP-966 ELRs"),
    no_effect(T, "preallocate", "only how segment files grow on disk"),
    no_effect(T, "remote.copy.lag.bytes", "tiered storage only; remote.storage.enable is refused"),
    no_effect(T, "remote.copy.lag.ms", "tiered storage only; remote.storage.enable is refused"),
    no_effect(T, "remote.log.copy.disable", "tiered storage only; remote.storage.enable is refused"),
    no_effect(T, "remote.log.delete.on.disable", "tiered storage only; remote.storage.enable is refused"),
    refused(T, "remote.storage.enable", "tiered storage is not built"),
    honoured(T, "retention.bytes", "the log store's size retention"),
    honoured(T, "retention.ms", "the log store's time retention"),
    honoured(T, "segment.bytes", SEGMENT),
    honoured(T, "segment.index.bytes", SEGMENT),
    no_effect(T, "segment.jitter.ms", "only spreads segment rolls in time"),
    honoured(T, "segment.ms", SEGMENT),
    honoured(T, "unclean.leader.election.enable", "the controller's leader election"),
    // Dynamic broker configs (also read from the properties file).
    no_effect(B, "background.threads", THREADS),
    no_effect(B, "compression.gzip.level", LEVEL),
    no_effect(B, "compression.lz4.level", LEVEL),
    honoured(B, "compression.type", "as the default of the topic's compression.type"),
    no_effect(B, "compression.zstd.level", LEVEL),
    refused(B, "config.providers", "kraftd resolves no config providers: a ${provider:path:key} value would be taken as it is written"),
    honoured(B, "cordoned.log.dirs", "KIP-1066: the broker places no new replica in a cordoned dir and refuses AlterReplicaLogDirs into one, DescribeLogDirs reports it, and heartbeats name it to the controller, which places no new replica on a broker whose every dir is cordoned; a change takes effect without restart"),
    honoured(B, "errors.deadletterqueue.auto.create.topics.enable", DLQ),
    honoured(B, "errors.deadletterqueue.topic.name.prefix", DLQ),
    no_effect(B, "follower.fetch.last.tiered.offset.enable", TIERED),
    honoured(B, "follower.replication.throttled.rate", THROTTLE),
    no_effect(B, "group.consumer.assignment.interval.ms", "kraftd's consumer groups have no assignment interval: a new target assignment is computed when the group epoch moves"),
    no_effect(B, "group.consumer.assignor.offload.enable", OFFLOAD),
    no_effect(B, "group.coordinator.cached.buffer.max.bytes", COORD_TUNING),
    honoured_static(B, "group.share.assignment.interval.ms", SHARE_GROUPS),
    no_effect(B, "group.share.assignor.offload.enable", OFFLOAD),
    honoured_static(B, "group.streams.assignment.interval.ms", STREAMS_GROUPS),
    no_effect(B, "group.streams.assignor.offload.enable", OFFLOAD),
    honoured(B, "leader.replication.throttled.rate", THROTTLE),
    honoured(B, "log.cleaner.backoff.ms", CLEANER_LIVE),
    honoured(B, "log.cleaner.dedupe.buffer.size", CLEANER_LIVE),
    honoured(B, "log.cleaner.delete.retention.ms", CLEANER),
    honoured(B, "log.cleaner.io.buffer.load.factor", CLEANER_LIVE),
    honoured(B, "log.cleaner.io.buffer.size", CLEANER_LIVE),
    honoured(B, "log.cleaner.io.max.bytes.per.second", CLEANER_LIVE),
    honoured(B, "log.cleaner.max.compaction.lag.ms", CLEANER),
    honoured(B, "log.cleaner.min.cleanable.ratio", CLEANER),
    honoured(B, "log.cleaner.min.compaction.lag.ms", CLEANER),
    honoured(B, "log.cleaner.threads", CLEANER_LIVE),
    honoured(B, "log.cleanup.policy", CLEANER),
    honoured(B, "log.flush.interval.messages", "as the default of flush.messages"),
    honoured(B, "log.flush.interval.ms", "as the default of flush.ms"),
    honoured(B, "log.index.interval.bytes", "as the default of index.interval.bytes"),
    honoured(B, "log.index.size.max.bytes", "as the default of segment.index.bytes"),
    no_effect(B, "log.local.retention.bytes", LOCAL_RETENTION),
    no_effect(B, "log.local.retention.ms", LOCAL_RETENTION),
    honoured(B, "log.message.timestamp.after.max.ms", "as the default of message.timestamp.after.max.ms"),
    honoured(B, "log.message.timestamp.before.max.ms", "as the default of message.timestamp.before.max.ms"),
    honoured(B, "log.message.timestamp.type", "as the default of message.timestamp.type"),
    no_effect(B, "log.preallocate", "only how segment files grow on disk"),
    no_effect(B, "log.remote.copy.lag.bytes", TIERED),
    no_effect(B, "log.remote.copy.lag.ms", TIERED),
    honoured(B, "log.retention.bytes", "as the default of retention.bytes"),
    honoured(B, "log.retention.ms", "as the default of retention.ms"),
    no_effect(B, "log.roll.jitter.ms", "only spreads segment rolls in time"),
    honoured(B, "log.roll.ms", "as the default of segment.ms"),
    honoured(B, "log.segment.bytes", "as the default of segment.bytes"),
    no_effect(B, "log.segment.delete.delay.ms", "as file.delete.delay.ms"),
    honoured(B, "max.connections", super::security_configs::CONNECTION_QUOTAS),
    refused(B, "max.decompressed.message.bytes", "produce, compaction and timestamp lookups do not bound a record's decompressed size"),
    honoured(B, "message.max.bytes", "as the default of max.message.bytes"),
    refused(B, "metric.reporters", REPORTERS),
    honoured(B, "min.insync.replicas", "as the default of min.insync.replicas"),
    no_effect(B, "num.io.threads", THREADS),
    no_effect(B, "num.network.threads", THREADS),
    honoured_static(B, "num.recovery.threads.per.data.dir", "threads per log dir opening and recovering logs at start (replica_manager/), from the properties file"),
    no_effect(B, "num.replica.fetchers", "one fetcher task per source broker; a thread count only tunes performance"),
    honoured(B, "producer.id.expiration.ms", "idempotent producer state idle this long is forgotten (not during an open transaction): at every producer.id.expiration.check.interval.ms (ReplicaManager::remove_expired_producers) and when a log is loaded; a dynamic change applies from the next check"),
    no_effect(B, "remote.fetch.max.wait.ms", TIERED),
    no_effect(B, "remote.list.offsets.request.timeout.ms", TIERED),
    no_effect(B, "remote.log.index.file.cache.total.size.bytes", TIERED),
    no_effect(B, "remote.log.manager.copier.thread.pool.size", TIERED),
    no_effect(B, "remote.log.manager.copy.max.bytes.per.second", TIERED),
    no_effect(B, "remote.log.manager.expiration.thread.pool.size", TIERED),
    no_effect(B, "remote.log.manager.fetch.max.bytes.per.second", TIERED),
    no_effect(B, "remote.log.manager.follower.thread.pool.size", TIERED),
    no_effect(B, "remote.log.reader.threads", TIERED),
    honoured(B, "replica.alter.log.dirs.io.max.bytes.per.second", "the copy of a replica into its future log in another log dir (AlterReplicaLogDirs), replica/replication_quota.rs"),
    no_effect(B, "share.coordinator.cached.buffer.max.bytes", COORD_TUNING),
    refused(B, "transaction.partition.verification.enable", "kraftd always verifies a transactional produce with its coordinator (KIP-890, server/txn_verification.rs)"),
    honoured(B, "unclean.leader.election.enable", "as the default of unclean.leader.election.enable"),
    // Static broker configs (the node's properties file only).
    no_effect(S, "add.partitions.to.txn.retry.backoff.max.ms", TXN_VERIFY),
    no_effect(S, "add.partitions.to.txn.retry.backoff.ms", TXN_VERIFY),
    honoured(S, "advertised.listeners", "what Metadata advertises"),
    refused(S, "alter.config.policy.class.name", POLICY),
    honoured(S, "auto.create.topics.enable", "the broker's Metadata handling"),
    honoured(S, "auto.leader.rebalance.enable", REBALANCE),
    honoured(S, "broker.heartbeat.interval.ms", "the broker's lifecycle manager"),
    honoured(S, "broker.id", "another name for node.id (KIP-1232, deprecated): used when node.id is not set, and start-up stops when both are set to different values"),
    honoured(S, "broker.rack", "rack-aware replica placement"),
    honoured(S, "broker.session.timeout.ms", "the controller fences a broker whose session expired"),
    honoured(S, "connections.max.idle.ms", "the listeners close idle connections"),
    honoured(S, "console.enable", "kraftd's own: the web console on the metrics listener (cli/src/console/)"),
    honoured(S, "console.metrics.endpoints", "kraftd's own: the other nodes' /metrics the console's Health page reads (cli/src/console/health.rs)"),
    no_effect(S, "controlled.shutdown.enable", "a kraftd broker always asks the controller for a controlled shutdown, with a deadline, before it stops (server/lifecycle.rs); only a SIGKILL skips it"),
    honoured(S, "controller.listener.names", "which listener is the controller's"),
    no_effect(S, "controller.performance.always.log.threshold.ms", "only what the controller logs about slow events"),
    no_effect(S, "controller.performance.sample.period.ms", "only what the controller logs about slow events"),
    honoured(S, "controller.quorum.append.linger.ms", RAFT),
    honoured(S, "controller.quorum.auto.join.enable", "an observer controller adds itself as a voter (KIP-853)"),
    honoured(S, "controller.quorum.bootstrap.servers", "with controller.quorum.voters, or alone for a dynamic quorum (KIP-853)"),
    honoured(S, "controller.quorum.election.backoff.max.ms", RAFT),
    honoured(S, "controller.quorum.election.timeout.ms", RAFT),
    no_effect(S, "controller.quorum.fetch.max.bytes", "Raft's Fetch and FetchSnapshot answers are sized by kraftd's own limits; a size only tunes how fast a follower catches up"),
    no_effect(S, "controller.quorum.fetch.snapshot.max.bytes", "Raft's Fetch and FetchSnapshot answers are sized by kraftd's own limits; a size only tunes how fast a follower catches up"),
    honoured(S, "controller.quorum.fetch.timeout.ms", RAFT),
    honoured(S, "controller.quorum.request.timeout.ms", RAFT),
    honoured(S, "controller.quorum.retry.backoff.ms", RAFT),
    honoured(S, "controller.quorum.voters", "the Raft quorum"),
    honoured(S, "controller.socket.timeout.ms", "the broker's forwarding channel: how long a forwarded request waits for the controller's answer before it is sent again (min with 60 s, as Kafka's forwarding NodeToControllerChannelManager); the other channels to the controller use controller.quorum.request.timeout.ms"),
    refused(S, "create.topic.policy.class.name", POLICY),
    honoured(S, "default.replication.factor", "the controller's CreateTopics"),
    no_effect(S, "delete.records.purgatory.purge.interval.requests", PURGATORY),
    honoured(S, "delete.topic.enable", "false: the controller refuses DeleteTopics with TOPIC_DELETION_DISABLED (INVALID_REQUEST before v3)"),
    no_effect(S, "early.start.listeners", "kraftd opens a node's listeners at start-up as it is ready to serve them; an early start changes only when a listener begins to accept connections, not what it answers"),
    no_effect(S, "fetch.max.bytes", "a fetch response is bounded by the request's max_bytes only; the broker-side cap only tunes memory"),
    no_effect(S, "fetch.purgatory.purge.interval.requests", PURGATORY),
    honoured(S, "group.consumer.assignors", GROUPS),
    honoured(S, "group.consumer.heartbeat.interval.ms", GROUPS),
    honoured(S, "group.consumer.max.assignment.interval.ms", "bounds the group config consumer.assignment.interval.ms the controller accepts (Kafka's GroupConfig.validate)"),
    honoured(S, "group.consumer.max.heartbeat.interval.ms", GROUPS),
    honoured(S, "group.consumer.max.session.timeout.ms", GROUPS),
    honoured(S, "group.consumer.max.size", GROUPS),
    honoured(S, "group.consumer.migration.policy", GROUPS),
    honoured(S, "group.consumer.min.assignment.interval.ms", "bounds the group config consumer.assignment.interval.ms the controller accepts (Kafka's GroupConfig.validate)"),
    honoured(S, "group.consumer.min.heartbeat.interval.ms", GROUPS),
    honoured(S, "group.consumer.min.session.timeout.ms", GROUPS),
    no_effect(S, "group.consumer.regex.refresh.interval.ms", "a group's regular expressions are resolved again when the broker's metadata changes (GroupCoordinatorShard::on_metadata_update), not on a timer"),
    honoured(S, "group.consumer.session.timeout.ms", GROUPS),
    no_effect(S, "group.coordinator.append.linger.ms", COORD_TUNING),
    no_effect(S, "group.coordinator.background.threads", THREADS),
    honoured(S, "group.coordinator.rebalance.protocols", "without consumer, ConsumerGroupHeartbeat/Describe answer UNSUPPORTED_VERSION (Kafka's isConsumerGroupProtocolEnabled, with group.version >= 1); without streams, the StreamsGroup* APIs do (isStreamsGroupProtocolEnabled); classic is required; share is only warned about, as in Kafka 4.4 share.version alone decides; a deprecation WARN at start as Kafka logs"),
    no_effect(S, "group.coordinator.threads", THREADS),
    honoured(S, "group.initial.rebalance.delay.ms", GROUPS),
    honoured(S, "group.max.session.timeout.ms", GROUPS),
    honoured(S, "group.max.size", GROUPS),
    honoured(S, "group.min.session.timeout.ms", GROUPS),
    honoured(S, "group.share.assignors", SHARE_GROUPS),
    honoured(S, "group.share.delivery.count.limit", SHARE_PARTITIONS),
    refused(S, "group.share.dlq.manager.class.name", PLUGIN),
    honoured(S, "group.share.heartbeat.interval.ms", SHARE_GROUPS),
    honoured(S, "group.share.initialize.retry.interval.ms", SHARE_GROUPS),
    honoured(S, "group.share.max.assignment.interval.ms", SHARE_GROUPS),
    honoured(S, "group.share.max.delivery.count.limit", SHARE_BOUNDS),
    honoured(S, "group.share.max.heartbeat.interval.ms", SHARE_GROUPS),
    honoured(S, "group.share.max.partition.max.record.locks", SHARE_BOUNDS),
    honoured(S, "group.share.max.record.lock.duration.ms", SHARE_BOUNDS),
    honoured(S, "group.share.max.session.timeout.ms", SHARE_GROUPS),
    honoured(S, "group.share.max.share.sessions", "the broker's share session cache (share/share_session_cache.rs): SHARE_SESSION_LIMIT_REACHED past it"),
    honoured(S, "group.share.max.size", SHARE_GROUPS),
    honoured(S, "group.share.min.assignment.interval.ms", SHARE_GROUPS),
    honoured(S, "group.share.min.delivery.count.limit", SHARE_BOUNDS),
    honoured(S, "group.share.min.heartbeat.interval.ms", SHARE_GROUPS),
    honoured(S, "group.share.min.partition.max.record.locks", SHARE_BOUNDS),
    honoured(S, "group.share.min.record.lock.duration.ms", SHARE_BOUNDS),
    honoured(S, "group.share.min.session.timeout.ms", SHARE_GROUPS),
    honoured(S, "group.share.partition.max.record.locks", SHARE_PARTITIONS),
    refused(S, "group.share.persister.class.name", PLUGIN),
    honoured(S, "group.share.record.lock.duration.ms", SHARE_PARTITIONS),
    honoured(S, "group.share.session.timeout.ms", SHARE_GROUPS),
    honoured(S, "group.streams.acceptable.recovery.lag", STREAMS_GROUPS),
    honoured(S, "group.streams.assignors", STREAMS_GROUPS),
    honoured(S, "group.streams.max.assignment.interval.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.max.warmup.replicas", "bounds the group config streams.num.warmup.replicas the controller accepts (Kafka's GroupConfig.validate)"),
    honoured(S, "group.streams.min.assignment.interval.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.heartbeat.interval.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.initial.rebalance.delay.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.max.heartbeat.interval.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.max.session.timeout.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.max.size", STREAMS_GROUPS),
    honoured(S, "group.streams.max.standby.replicas", STREAMS_GROUPS),
    honoured(S, "group.streams.min.heartbeat.interval.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.min.session.timeout.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.min.task.offset.interval.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.num.standby.replicas", STREAMS_GROUPS),
    no_effect(S, "group.streams.num.warmup.replicas", "the default of the group config streams.num.warmup.replicas, which has no effect (its row says why)"),
    no_effect(S, "group.streams.rack.aware.assignment.tags", "the default of the group config streams.rack.aware.assignment.tags, which has no effect (its row says why)"),
    honoured(S, "group.streams.session.timeout.ms", STREAMS_GROUPS),
    honoured(S, "group.streams.task.offset.interval.ms", STREAMS_GROUPS),
    refused(S, "group.streams.topology.description.plugin.class", PLUGIN),
    no_effect(S, "initial.broker.registration.timeout.ms", "a kraftd broker keeps retrying its registration rather than stopping after a timeout; it serves no client until registered either way"),
    honoured(S, "inter.broker.listener.name", "the listener replicas fetch from"),
    no_effect(S, "internal.metadata.delete.delay.millis", METADATA_LOG_DELETE),
    honoured(S, "internal.metadata.log.segment.bytes", METADATA_LOG),
    no_effect(S, "internal.metadata.max.batch.size.in.bytes", "Raft batches are capped at Kafka's default, 8 MiB (kraftd-raft snapshot.rs DEFAULT_MAX_BATCH_BYTES)"),
    no_effect(S, "kafka.metrics.polling.interval.secs", METRICS),
    refused(S, "kafka.metrics.reporters", REPORTERS),
    honoured(S, "leader.imbalance.check.interval.seconds", REBALANCE),
    honoured(S, "listeners", "the sockets bound"),
    honoured(S, "log.cleaner.enable", CLEANER),
    honoured(S, "log.dir", "when log.dirs is not set"),
    honoured(S, "log.dir.failure.timeout.ms", "a broker whose failed log dir no heartbeat answered without error has reported to the controller within this time stops (KIP-858; broker server/lifecycle.rs)"),
    honoured(S, "log.dirs", "the data directories"),
    honoured(S, "log.flush.offset.checkpoint.interval.ms", "how often each log dir's recovery-point-offset-checkpoint is rewritten (replica_manager/background.rs)"),
    honoured(S, "log.flush.scheduler.interval.ms", "Kafka's LogManager flusher: this often, every log whose flush.ms has passed since its last flush is flushed, an idle one too (replica_manager/background.rs); flush.ms's default when log.flush.interval.ms is not set"),
    honoured(S, "log.flush.start.offset.checkpoint.interval.ms", "how often each log dir's log-start-offset-checkpoint is rewritten (replica_manager/background.rs)"),
    no_effect(S, "log.initial.task.delay.ms", "kraftd's log tasks (retention, checkpoints) start on their own intervals from start-up; a first delay only spreads load"),
    honoured(S, "log.retention.check.interval.ms", "how often the broker applies retention.ms and retention.bytes (replica_manager/background.rs)"),
    honoured(S, "log.segment.idle.close.ms", "kraftd's own: the log store's pool of open segment files (handles.rs)"),
    honoured(S, "log.segment.open.files.max", "kraftd's own: the log store's pool of open segment files (handles.rs)"),
    honoured(S, "log.retention.hours", "as the default of retention.ms"),
    honoured(S, "log.retention.minutes", "as the default of retention.ms"),
    honoured(S, "log.roll.hours", "as the default of segment.ms"),
    no_effect(S, "log.roll.jitter.hours", "only spreads segment rolls in time"),
    honoured(S, "max.incremental.fetch.session.cache.slots", "the broker's fetch session cache (replica/fetch_session/)"),
    honoured(S, "max.request.partition.size.limit", "caps DescribeTopicPartitions' partitions per response"),
    honoured(S, "metadata.log.dir", "the metadata log's directory"),
    honoured(S, "metadata.log.max.record.bytes.between.snapshots", "the active controller's snapshots of the metadata log"),
    honoured(S, "metadata.log.max.snapshot.interval.ms", "the active controller's snapshots of the metadata log"),
    honoured(S, "metadata.log.segment.bytes", METADATA_LOG),
    honoured(S, "metadata.log.segment.ms", METADATA_LOG),
    honoured(S, "metadata.max.idle.interval.ms", "the active controller writes a no-op record after this much idleness, so brokers see the metadata log advance"),
    no_effect(S, "metadata.max.retention.bytes", METADATA_LOG_DELETE),
    no_effect(S, "metadata.max.retention.ms", METADATA_LOG_DELETE),
    no_effect(S, "metrics.num.samples", METRICS),
    no_effect(S, "metrics.recording.level", METRICS),
    no_effect(S, "metrics.sample.window.ms", METRICS),
    honoured(S, "node.id", "the node's id"),
    honoured(S, "num.partitions", "the controller's CreateTopics"),
    no_effect(S, "num.replica.alter.log.dirs.threads", THREADS),
    honoured(S, "offset.metadata.max.bytes", GROUPS),
    no_effect(S, "offsets.commit.timeout.ms", "a commit is answered once the offsets partition's ISR holds it; the client's own request timeout bounds its wait"),
    no_effect(S, "offsets.load.buffer.size", LOAD_BUFFER),
    honoured(S, "offsets.retention.check.interval.ms", GROUPS),
    honoured(S, "offsets.retention.minutes", GROUPS),
    no_effect(S, "offsets.topic.compression.codec", CODEC),
    honoured(S, "offsets.topic.num.partitions", OFFSETS_TOPIC),
    honoured(S, "offsets.topic.replication.factor", OFFSETS_TOPIC),
    honoured(S, "offsets.topic.segment.bytes", OFFSETS_TOPIC),
    honoured(S, "process.roles", "the roles the node runs"),
    honoured(S, "producer.id.expiration.check.interval.ms", "the broker's periodic producer-id expiry (ReplicaManager::remove_expired_producers, Kafka's PeriodicProducerExpirationCheck)"),
    no_effect(S, "producer.purgatory.purge.interval.requests", PURGATORY),
    no_effect(S, "queued.max.request.bytes", "kraftd bounds the requests in flight per connection (kraftd-net server.rs) instead of one queue; these only tune memory"),
    no_effect(S, "queued.max.requests", "kraftd bounds the requests in flight per connection (kraftd-net server.rs) instead of one queue; these only tune memory"),
    no_effect(S, "remote.log.index.file.cache.ttl.ms", TIERED),
    no_effect(S, "remote.log.manager.copy.quota.window.num", TIERED),
    no_effect(S, "remote.log.manager.copy.quota.window.size.seconds", TIERED),
    no_effect(S, "remote.log.manager.fetch.quota.window.num", TIERED),
    no_effect(S, "remote.log.manager.fetch.quota.window.size.seconds", TIERED),
    no_effect(S, "remote.log.manager.task.interval.ms", TIERED),
    no_effect(S, "remote.log.manager.task.retry.backoff.max.ms", TIERED),
    no_effect(S, "remote.log.manager.task.retry.backoff.ms", TIERED),
    no_effect(S, "remote.log.manager.task.retry.jitter", TIERED),
    no_effect(S, "remote.log.manager.thread.pool.size", TIERED),
    no_effect(S, "remote.log.metadata.custom.metadata.max.bytes", TIERED),
    no_effect(S, "remote.log.metadata.manager.class.name", TIERED),
    no_effect(S, "remote.log.metadata.manager.class.path", TIERED),
    no_effect(S, "remote.log.metadata.manager.impl.prefix", TIERED),
    no_effect(S, "remote.log.metadata.manager.listener.name", TIERED),
    no_effect(S, "remote.log.reader.max.pending.tasks", TIERED),
    no_effect(S, "remote.log.storage.manager.class.name", TIERED),
    no_effect(S, "remote.log.storage.manager.class.path", TIERED),
    no_effect(S, "remote.log.storage.manager.impl.prefix", TIERED),
    refused(S, "remote.log.storage.system.enable", "tiered storage is not built"),
    honoured(S, "replica.fetch.backoff.ms", FETCHER),
    honoured(S, "replica.fetch.max.bytes", FETCHER),
    honoured(S, "replica.fetch.min.bytes", FETCHER),
    honoured(S, "replica.fetch.response.max.bytes", FETCHER),
    honoured(S, "replica.fetch.wait.max.ms", FETCHER),
    honoured(S, "replica.high.watermark.checkpoint.interval.ms", "how often each log dir's replication-offset-checkpoint is rewritten (replica_manager/background.rs)"),
    honoured(S, "replica.lag.time.max.ms", "the leader drops a follower from the ISR that has not caught up for this long (partition/isr.rs)"),
    refused(S, "replica.selector.class", PLUGIN),
    no_effect(S, "replica.socket.receive.buffer.bytes", SOCKET),
    honoured(S, "replica.socket.timeout.ms", FETCHER),
    no_effect(S, "request.timeout.ms", "requests between nodes use kraftd's own timeouts; it only tunes failure detection"),
    no_effect(S, "server.max.startup.time.ms", "kraftd gives start-up no deadline of its own; a supervisor may"),
    no_effect(S, "share.coordinator.append.linger.ms", COORD_TUNING),
    honoured(S, "share.coordinator.cold.partition.snapshot.interval.ms", SHARE_COORDINATOR),
    no_effect(S, "share.coordinator.load.buffer.size", LOAD_BUFFER),
    honoured(S, "share.coordinator.snapshot.update.records.per.snapshot", SHARE_COORDINATOR),
    no_effect(S, "share.coordinator.state.topic.compression.codec", CODEC),
    honoured(S, "share.coordinator.state.topic.min.isr", SHARE_STATE_TOPIC),
    honoured(S, "share.coordinator.state.topic.num.partitions", SHARE_STATE_TOPIC),
    honoured(S, "share.coordinator.state.topic.prune.interval.ms", "the share coordinator's shards delete the records every share partition has moved past (DeleteRecords on __share_group_state)"),
    honoured(S, "share.coordinator.state.topic.replication.factor", SHARE_STATE_TOPIC),
    honoured(S, "share.coordinator.state.topic.segment.bytes", SHARE_STATE_TOPIC),
    no_effect(S, "share.coordinator.threads", THREADS),
    no_effect(S, "share.coordinator.write.timeout.ms", "a share-state write is answered once committed; the persister's own timeout bounds the wait"),
    no_effect(S, "share.fetch.purgatory.purge.interval.requests", PURGATORY),
    no_effect(S, "socket.connection.setup.timeout.max.ms", SOCKET),
    no_effect(S, "socket.connection.setup.timeout.ms", SOCKET),
    no_effect(S, "socket.listen.backlog.size", SOCKET),
    no_effect(S, "socket.receive.buffer.bytes", SOCKET),
    honoured(S, "socket.request.max.bytes", "checked from each request's size prefix"),
    no_effect(S, "socket.send.buffer.bytes", SOCKET),
    honoured(S, "telemetry.max.bytes", "caps a PushTelemetry's metrics (TELEMETRY_TOO_LARGE) and is told to clients in GetTelemetrySubscriptions"),
    honoured(S, "transaction.abort.timed.out.transaction.cleanup.interval.ms", TXN),
    honoured(S, "transaction.max.timeout.ms", TXN),
    honoured(S, "transaction.remove.expired.transaction.cleanup.interval.ms", TXN),
    no_effect(S, "transaction.state.log.load.buffer.size", LOAD_BUFFER),
    honoured(S, "transaction.state.log.min.isr", TXN_TOPIC),
    honoured(S, "transaction.state.log.num.partitions", TXN_TOPIC),
    honoured(S, "transaction.state.log.replication.factor", TXN_TOPIC),
    honoured(S, "transaction.state.log.segment.bytes", TXN_TOPIC),
    refused(S, "transaction.two.phase.commit.enable", "two-phase commit with external transaction managers (KIP-939) is not built"),
    honoured(S, "transactional.id.expiration.ms", TXN),
    honoured(S, "unclean.leader.election.interval.ms", "the active controller's periodic unclean elections for leaderless partitions whose topic allows them (QuorumController::tick)"),
    refused(S, "unstable.api.versions.enable", "kraftd advertises only the API and feature versions it implements; unstable versions are never offered"),
    refused(S, "unstable.feature.versions.enable", "kraftd advertises only the API and feature versions it implements; unstable versions are never offered"),
    // Group configs (ConfigResource GROUP).
    no_effect(G, "consumer.assignment.interval.ms", "kraftd's consumer groups have no assignment interval: a new target assignment is computed when the group epoch moves"),
    no_effect(G, "consumer.assignor.offload.enable", OFFLOAD),
    honoured(G, "consumer.heartbeat.interval.ms", PER_GROUP_COORDINATOR),
    honoured(G, "consumer.session.timeout.ms", PER_GROUP_COORDINATOR),
    honoured(G, "errors.deadletterqueue.copy.record.enable", DLQ),
    honoured(G, "errors.deadletterqueue.topic.name", DLQ),
    honoured(G, "share.assignment.interval.ms", PER_GROUP_COORDINATOR),
    no_effect(G, "share.assignor.offload.enable", OFFLOAD),
    honoured(G, "share.auto.offset.reset", PER_GROUP_SHARE_PARTITIONS),
    honoured(G, "share.delivery.count.limit", PER_GROUP_SHARE_PARTITIONS),
    honoured(G, "share.heartbeat.interval.ms", PER_GROUP_COORDINATOR),
    honoured(G, "share.isolation.level", PER_GROUP_SHARE_PARTITIONS),
    honoured(G, "share.partition.max.record.locks", PER_GROUP_SHARE_PARTITIONS),
    honoured(G, "share.record.lock.duration.ms", PER_GROUP_SHARE_PARTITIONS),
    honoured(G, "share.renew.acknowledge.enable", PER_GROUP_SHARE_PARTITIONS),
    honoured(G, "share.session.timeout.ms", PER_GROUP_COORDINATOR),
    no_effect(G, "streams.acceptable.recovery.lag", STREAMS),
    no_effect(G, "streams.assignment.interval.ms", STREAMS),
    no_effect(G, "streams.assignor.name", STREAMS),
    no_effect(G, "streams.assignor.offload.enable", STREAMS),
    no_effect(G, "streams.heartbeat.interval.ms", STREAMS),
    no_effect(G, "streams.initial.rebalance.delay.ms", STREAMS),
    no_effect(G, "streams.num.standby.replicas", STREAMS),
    no_effect(G, "streams.num.warmup.replicas", STREAMS),
    no_effect(G, "streams.rack.aware.assignment.tags", STREAMS),
    no_effect(G, "streams.session.timeout.ms", STREAMS),
    no_effect(G, "streams.task.offset.interval.ms", STREAMS),
];

/// Every support row: [`CONFIG_SUPPORT`] then [`SECURITY_SUPPORT`].
pub fn support_rows() -> impl Iterator<Item = &'static ConfigSupport> {
    CONFIG_SUPPORT.iter().chain(SECURITY_SUPPORT)
}

/// The support row of a key in a scope.
pub fn config_support(scope: ConfigScope, name: &str) -> Option<&'static ConfigSupport> {
    support_rows().find(|s| s.scope == scope && s.name == name)
}

/// Whether `value` asks for Kafka's default of `def` (compared as Kafka prints parsed
/// values, so `TRUE` is `true` and ` 1.0` is `1`); never, for a null default.
fn is_kafka_default(def: &ConfigDef, value: &str) -> bool {
    def.default
        .is_some_and(|d| def.canonical_value(d) == def.canonical_value(value))
}

fn unsupported(
    scope: ConfigScope,
    def: &ConfigDef,
    value: &str,
    dynamic: bool,
) -> ConfigValueError {
    ConfigValueError::Unsupported {
        key: def.name.to_string(),
        why: config_support(scope, def.name).map_or("kraftd does not act on it", |s| s.note),
        value: if def.sensitive {
            "[hidden]".to_string()
        } else {
            value.trim().to_string()
        },
        default: def.default,
        dynamic,
    }
}

/// Refuses a value set by CreateTopics or (Incremental)AlterConfigs that kraftd would not
/// act on (its [`Support`] is [`Support::RefusedUnlessDefault`], or
/// [`Support::HonouredStatic`] for a dynamic broker config) unless it is Kafka's default,
/// and a SASL mechanism kraftd does not serve even then (GSSAPI is Kafka's default), and an
/// `internal.segment.bytes` smaller than the log store can roll at.
/// `value` has passed [`ConfigDef::validate`].
pub fn check_dynamic_support(
    scope: ConfigScope,
    def: &ConfigDef,
    value: &str,
) -> Result<(), ConfigValueError> {
    check_sasl_mechanism_value(def.name, value, false)?;
    if def.name == INTERNAL_SEGMENT_BYTES {
        if let Some(n) = value
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|n| *n < MIN_INTERNAL_SEGMENT_BYTES)
        {
            return Err(ConfigValueError::InvalidValue {
                key: def.name.to_string(),
                value: n.to_string(),
                reason: format!(
                    "Value must be at least {MIN_INTERNAL_SEGMENT_BYTES} (the smallest segment \
                     kraftd's log store rolls at)"
                ),
            });
        }
    }
    let support =
        config_support(scope, def.name).map_or(Support::RefusedUnlessDefault, |s| s.support);
    match support {
        Support::Honoured | Support::NoEffect => Ok(()),
        Support::HonouredStatic | Support::RefusedUnlessDefault if is_kafka_default(def, value) => {
            Ok(())
        }
        Support::HonouredStatic => Err(unsupported(scope, def, value, true)),
        Support::RefusedUnlessDefault => Err(unsupported(scope, def, value, false)),
    }
}

/// Refuses a broker config in the node's properties file that kraftd does not support
/// ([`Support::RefusedUnlessDefault`]) unless it is Kafka's default; a listener-prefixed
/// security config (`listener.name.<l>.<config>`) as its base config. Keys kraftd does not
/// know as broker configs pass: the file holds other programs' settings too. (SASL
/// mechanisms depend on the listeners' protocols:
/// [`super::security_checks::check_static_sasl_mechanisms`].)
pub fn check_static_support(key: &str, value: &str) -> Result<(), ConfigValueError> {
    let base = listener_key(key).map_or(key, |k| k.base);
    let found = [ConfigScope::Broker, ConfigScope::StaticBroker]
        .into_iter()
        .find_map(|scope| {
            let def = scope.def(base)?;
            Some((scope, def, config_support(scope, base)?.support))
        });
    match found {
        Some((scope, def, Support::RefusedUnlessDefault)) if !is_kafka_default(def, value) => {
            Err(unsupported(scope, def, value, false))
        }
        _ => Ok(()),
    }
}

/// The table of [`CONFIG_SUPPORT`] as Markdown, as `docs/configs.md` holds it.
pub fn render_support_table() -> String {
    let mut out =
        String::from("| key | set on | status | default | where / why |\n|---|---|---|---|---|\n");
    let mut rows: Vec<&ConfigSupport> = support_rows().collect();
    rows.sort_by_key(|r| (r.scope, r.name));
    for row in rows {
        let default = row.scope.def(row.name).and_then(|d| d.default).map_or_else(
            || "(null)".to_string(),
            |d| {
                if d.is_empty() {
                    "\"\"".to_string()
                } else {
                    format!("`{d}`")
                }
            },
        );
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} |\n",
            row.name,
            row.scope.label(row.name),
            row.support.label(),
            default,
            row.note
        ));
    }
    out
}
