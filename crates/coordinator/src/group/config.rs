//! `GroupCoordinatorConfig`: Kafka's group coordinator settings, by Kafka's names and with
//! Kafka 4.4's defaults. The broker reads them from its properties file
//! ([`GroupCoordinatorConfig::from_properties`]); a value that does not parse is refused
//! with the key and the value named.

use std::collections::BTreeMap;

use crate::config::{ConfigError, Property};

/// What `group.consumer.migration.policy` allows between the classic and consumer protocols.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MigrationPolicy {
    /// Neither direction: a group of one protocol refuses the other (GROUP_ID_NOT_FOUND /
    /// INCONSISTENT_GROUP_PROTOCOL, as Kafka's DISABLED).
    Disabled,
    /// An empty group of one protocol may be taken over by a member of the other.
    Bidirectional,
    Upgrade,
    Downgrade,
}

/// The server-side assignors of KIP-848 consumer groups (`group.consumer.assignors`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AssignorName {
    Uniform,
    Range,
}

impl AssignorName {
    pub fn name(self) -> &'static str {
        match self {
            AssignorName::Uniform => "uniform",
            AssignorName::Range => "range",
        }
    }

    /// Kafka accepts the short name or the class name.
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim() {
            "uniform" | "org.apache.kafka.coordinator.group.assignor.UniformAssignor" => {
                Some(AssignorName::Uniform)
            }
            "range" | "org.apache.kafka.coordinator.group.assignor.RangeAssignor" => {
                Some(AssignorName::Range)
            }
            _ => None,
        }
    }
}

/// `group.coordinator.rebalance.protocols`' default (Kafka's
/// `GROUP_COORDINATOR_REBALANCE_PROTOCOLS_DEFAULT`).
pub const REBALANCE_PROTOCOLS_DEFAULT: &[&str] = &["classic", "consumer", "streams"];

/// The values `group.coordinator.rebalance.protocols` accepts (Kafka's
/// `GroupType.documentValidValues`).
pub const REBALANCE_PROTOCOLS_VALID: &[&str] = &["consumer", "classic", "share", "streams"];

/// Kafka's reading of `group.coordinator.rebalance.protocols`: a non-empty list of
/// [`REBALANCE_PROTOCOLS_VALID`] that keeps `classic` ("Disabling the 'classic' protocol is
/// not supported.").
fn rebalance_protocols(p: &Property<'_>, value: &str) -> Result<Vec<String>, ConfigError> {
    let list: Vec<String> = value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect();
    if list.is_empty() {
        return Err(p.invalid("empty list is not allowed"));
    }
    if let Some(bad) = list
        .iter()
        .find(|v| !REBALANCE_PROTOCOLS_VALID.contains(&v.as_str()))
    {
        return Err(p.invalid(&format!(
            "{bad:?} is not one of {}",
            REBALANCE_PROTOCOLS_VALID.join(", ")
        )));
    }
    if !list.iter().any(|v| v == "classic") {
        return Err(p.invalid("Disabling the 'classic' protocol is not supported."));
    }
    // Kafka's KafkaConfig warns as it reads the list: the setting is deprecated, and share
    // groups are decided by `share.version` alone.
    if list.iter().any(|v| v == "share") {
        tracing::warn!(
            "'SHARE' in `group.coordinator.rebalance.protocols` is deprecated. Share groups are \
             controlled by the 'share.version' feature. This config will be removed in Kafka 5.0."
        );
    }
    let missing: Vec<String> = REBALANCE_PROTOCOLS_DEFAULT
        .iter()
        .filter(|d| !list.iter().any(|v| v == *d))
        .map(|d| d.to_ascii_uppercase())
        .collect();
    if missing.is_empty() {
        tracing::warn!(
            "The config `group.coordinator.rebalance.protocols` is deprecated and will be removed \
             in Kafka 5.0. Please remove the configuration to prepare for the upgrade."
        );
    } else {
        tracing::warn!(
            "The config `group.coordinator.rebalance.protocols` is deprecated and will be removed \
             in Kafka 5.0. The following protocol(s) are currently disabled: {}. In Kafka 5.0, \
             all protocols will always be enabled and controlled solely by feature versions \
             (group.version, streams.version, share.version) via kafka-features.sh. Please \
             remove the configuration, which will restore all protocols to the default enabled \
             state, to prepare for the upgrade.",
            missing.join(", ")
        );
    }
    Ok(list)
}

impl GroupCoordinatorConfig {
    /// Whether `group.coordinator.rebalance.protocols` lists `protocol` (Kafka's
    /// `config.groupCoordinatorRebalanceProtocols.contains`).
    pub fn rebalance_protocol_enabled(&self, protocol: &str) -> bool {
        self.rebalance_protocols.iter().any(|p| p == protocol)
    }
}

/// The share groups' one assignor (`group.share.assignors`' default).
const SHARE_ASSIGNOR: &str = "simple";

/// The settings one shard runs by; Kafka's names in the field docs.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupCoordinatorConfig {
    /// `offsets.topic.num.partitions`.
    pub offsets_topic_partitions: i32,
    /// `offsets.topic.replication.factor`.
    pub offsets_topic_replication_factor: i16,
    /// `offsets.topic.segment.bytes`.
    pub offsets_topic_segment_bytes: i32,
    /// `group.min.session.timeout.ms`.
    pub classic_min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`.
    pub classic_max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`.
    pub classic_initial_rebalance_delay_ms: i32,
    /// `group.max.size`.
    pub classic_group_max_size: i32,
    /// `group.consumer.session.timeout.ms`.
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.min.session.timeout.ms`.
    pub consumer_min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms`.
    pub consumer_max_session_timeout_ms: i32,
    /// `group.consumer.heartbeat.interval.ms`.
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms`.
    pub consumer_min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms`.
    pub consumer_max_heartbeat_interval_ms: i32,
    /// `group.consumer.max.size`.
    pub consumer_group_max_size: i32,
    /// `group.consumer.assignors`: the first is the default.
    pub consumer_assignors: Vec<AssignorName>,
    /// `group.coordinator.rebalance.protocols` (deprecated in Kafka 4.3, still honoured):
    /// the group types served, lower case; `classic` always among them.
    pub rebalance_protocols: Vec<String>,
    /// `group.consumer.migration.policy`.
    pub migration_policy: MigrationPolicy,
    /// `group.share.session.timeout.ms`.
    pub share_session_timeout_ms: i32,
    /// `group.share.min.session.timeout.ms`.
    pub share_min_session_timeout_ms: i32,
    /// `group.share.max.session.timeout.ms`.
    pub share_max_session_timeout_ms: i32,
    /// `group.share.heartbeat.interval.ms`.
    pub share_heartbeat_interval_ms: i32,
    /// `group.share.min.heartbeat.interval.ms`.
    pub share_min_heartbeat_interval_ms: i32,
    /// `group.share.max.heartbeat.interval.ms`.
    pub share_max_heartbeat_interval_ms: i32,
    /// `group.share.max.size`.
    pub share_group_max_size: i32,
    /// `group.share.assignment.interval.ms`: a share group's target assignment is computed
    /// at most this often.
    pub share_assignment_interval_ms: i32,
    /// `group.share.min.assignment.interval.ms`.
    pub share_min_assignment_interval_ms: i32,
    /// `group.share.max.assignment.interval.ms`.
    pub share_max_assignment_interval_ms: i32,
    /// `group.share.initialize.retry.interval.ms`: a share partition still initializing
    /// after this long is initialized again on the next heartbeat.
    pub share_initialize_retry_interval_ms: i32,
    /// The `group.streams.*` settings (KIP-1071 streams groups).
    pub streams: StreamsGroupConfig,
    /// `offsets.retention.minutes`, in ms.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval_ms: i64,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: i32,
    /// `offsets.commit.timeout.ms`.
    pub offset_commit_timeout_ms: i32,
    /// The largest record batch the shard may write in one operation (the offsets topic's
    /// `max.message.bytes`): an operation whose records exceed it fails and changes nothing.
    pub max_batch_bytes: usize,
}

impl GroupCoordinatorConfig {
    /// The settings one group runs by: these, with the group's dynamic configs (ConfigResource
    /// GROUP) over them, each clamped into this node's bounds, as Kafka's `GroupConfigManager`
    /// evaluates them (`GroupConfig.evaluate`): `consumer.session.timeout.ms`,
    /// `consumer.heartbeat.interval.ms`, `share.session.timeout.ms`,
    /// `share.heartbeat.interval.ms` and `share.assignment.interval.ms`. A value that does not
    /// parse is left out (the controller validated it).
    pub fn for_group(&self, configs: &BTreeMap<String, String>) -> GroupCoordinatorConfig {
        let mut c = self.clone();
        let value = |key: &str, min: i32, max: i32| {
            configs
                .get(key)
                .and_then(|v| v.trim().parse::<i32>().ok())
                .map(|v| v.clamp(min, max.max(min)))
        };
        if let Some(v) = value(
            "consumer.session.timeout.ms",
            self.consumer_min_session_timeout_ms,
            self.consumer_max_session_timeout_ms,
        ) {
            c.consumer_session_timeout_ms = v;
        }
        if let Some(v) = value(
            "consumer.heartbeat.interval.ms",
            self.consumer_min_heartbeat_interval_ms,
            self.consumer_max_heartbeat_interval_ms,
        ) {
            c.consumer_heartbeat_interval_ms = v;
        }
        if let Some(v) = value(
            "share.session.timeout.ms",
            self.share_min_session_timeout_ms,
            self.share_max_session_timeout_ms,
        ) {
            c.share_session_timeout_ms = v;
        }
        if let Some(v) = value(
            "share.heartbeat.interval.ms",
            self.share_min_heartbeat_interval_ms,
            self.share_max_heartbeat_interval_ms,
        ) {
            c.share_heartbeat_interval_ms = v;
        }
        let s = &self.streams;
        if let Some(v) = value(
            "streams.session.timeout.ms",
            s.min_session_timeout_ms,
            s.max_session_timeout_ms,
        ) {
            c.streams.session_timeout_ms = v;
        }
        if let Some(v) = value(
            "streams.heartbeat.interval.ms",
            s.min_heartbeat_interval_ms,
            s.max_heartbeat_interval_ms,
        ) {
            c.streams.heartbeat_interval_ms = v;
        }
        if let Some(v) = value("streams.num.standby.replicas", 0, s.max_standby_replicas) {
            c.streams.num_standby_replicas = v;
        }
        if let Some(v) = value("streams.initial.rebalance.delay.ms", 0, i32::MAX) {
            c.streams.initial_rebalance_delay_ms = v;
        }
        if let Some(v) = value(
            "streams.assignment.interval.ms",
            s.min_assignment_interval_ms,
            s.max_assignment_interval_ms,
        ) {
            c.streams.assignment_interval_ms = v;
        }
        if let Some(v) = value(
            "share.assignment.interval.ms",
            self.share_min_assignment_interval_ms,
            self.share_max_assignment_interval_ms,
        ) {
            c.share_assignment_interval_ms = v;
        }
        c
    }
}

impl Default for GroupCoordinatorConfig {
    fn default() -> Self {
        GroupCoordinatorConfig {
            offsets_topic_partitions: 50,
            offsets_topic_replication_factor: 3,
            offsets_topic_segment_bytes: 100 * 1024 * 1024,
            classic_min_session_timeout_ms: 6_000,
            classic_max_session_timeout_ms: 1_800_000,
            classic_initial_rebalance_delay_ms: 3_000,
            classic_group_max_size: i32::MAX,
            consumer_session_timeout_ms: 45_000,
            consumer_min_session_timeout_ms: 45_000,
            consumer_max_session_timeout_ms: 60_000,
            consumer_heartbeat_interval_ms: 5_000,
            consumer_min_heartbeat_interval_ms: 5_000,
            consumer_max_heartbeat_interval_ms: 15_000,
            consumer_group_max_size: i32::MAX,
            consumer_assignors: vec![AssignorName::Uniform, AssignorName::Range],
            rebalance_protocols: REBALANCE_PROTOCOLS_DEFAULT
                .iter()
                .map(|p| p.to_string())
                .collect(),
            migration_policy: MigrationPolicy::Bidirectional,
            share_session_timeout_ms: 45_000,
            share_min_session_timeout_ms: 45_000,
            share_max_session_timeout_ms: 60_000,
            share_heartbeat_interval_ms: 5_000,
            share_min_heartbeat_interval_ms: 5_000,
            share_max_heartbeat_interval_ms: 15_000,
            share_group_max_size: 200,
            share_assignment_interval_ms: 1_000,
            share_min_assignment_interval_ms: 0,
            share_max_assignment_interval_ms: 15_000,
            share_initialize_retry_interval_ms: 30_000,
            streams: StreamsGroupConfig::default(),
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            offset_metadata_max_bytes: 4096,
            offset_commit_timeout_ms: 5_000,
            max_batch_bytes: 1_048_588,
        }
    }
}

impl GroupCoordinatorConfig {
    /// Every key [`GroupCoordinatorConfig::from_properties`] reads.
    pub const KEYS: &'static [&'static str] = &[
        "offsets.topic.num.partitions",
        "offsets.topic.replication.factor",
        "offsets.topic.segment.bytes",
        "group.min.session.timeout.ms",
        "group.max.session.timeout.ms",
        "group.initial.rebalance.delay.ms",
        "group.max.size",
        "group.consumer.session.timeout.ms",
        "group.consumer.min.session.timeout.ms",
        "group.consumer.max.session.timeout.ms",
        "group.consumer.heartbeat.interval.ms",
        "group.consumer.min.heartbeat.interval.ms",
        "group.consumer.max.heartbeat.interval.ms",
        "group.consumer.max.size",
        "group.consumer.assignors",
        "group.consumer.migration.policy",
        "group.coordinator.rebalance.protocols",
        "group.share.session.timeout.ms",
        "group.share.min.session.timeout.ms",
        "group.share.max.session.timeout.ms",
        "group.share.heartbeat.interval.ms",
        "group.share.min.heartbeat.interval.ms",
        "group.share.max.heartbeat.interval.ms",
        "group.share.max.size",
        "group.share.assignors",
        "group.share.assignment.interval.ms",
        "group.share.min.assignment.interval.ms",
        "group.share.max.assignment.interval.ms",
        "group.share.initialize.retry.interval.ms",
        "group.streams.session.timeout.ms",
        "group.streams.min.session.timeout.ms",
        "group.streams.max.session.timeout.ms",
        "group.streams.heartbeat.interval.ms",
        "group.streams.min.heartbeat.interval.ms",
        "group.streams.max.heartbeat.interval.ms",
        "group.streams.max.size",
        "group.streams.num.standby.replicas",
        "group.streams.max.standby.replicas",
        "group.streams.initial.rebalance.delay.ms",
        "group.streams.assignment.interval.ms",
        "group.streams.min.assignment.interval.ms",
        "group.streams.max.assignment.interval.ms",
        "group.streams.task.offset.interval.ms",
        "group.streams.min.task.offset.interval.ms",
        "group.streams.acceptable.recovery.lag",
        "offsets.retention.minutes",
        "offsets.retention.check.interval.ms",
        "offset.metadata.max.bytes",
        "offsets.commit.timeout.ms",
    ];

    /// The settings from a properties map (Kafka's defaults for what it lacks).
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut c = GroupCoordinatorConfig::default();
        for (key, value) in props {
            let p = Property::new(key, value);
            match key.as_str() {
                "offsets.topic.num.partitions" => c.offsets_topic_partitions = p.int(1)?,
                "offsets.topic.replication.factor" => {
                    c.offsets_topic_replication_factor = p.short(1)?
                }
                "offsets.topic.segment.bytes" => c.offsets_topic_segment_bytes = p.int(1)?,
                "group.min.session.timeout.ms" => c.classic_min_session_timeout_ms = p.int(0)?,
                "group.max.session.timeout.ms" => c.classic_max_session_timeout_ms = p.int(0)?,
                "group.initial.rebalance.delay.ms" => {
                    c.classic_initial_rebalance_delay_ms = p.int(0)?
                }
                "group.max.size" => c.classic_group_max_size = p.int(1)?,
                "group.consumer.session.timeout.ms" => c.consumer_session_timeout_ms = p.int(1)?,
                "group.consumer.min.session.timeout.ms" => {
                    c.consumer_min_session_timeout_ms = p.int(1)?
                }
                "group.consumer.max.session.timeout.ms" => {
                    c.consumer_max_session_timeout_ms = p.int(1)?
                }
                "group.consumer.heartbeat.interval.ms" => {
                    c.consumer_heartbeat_interval_ms = p.int(1)?
                }
                "group.consumer.min.heartbeat.interval.ms" => {
                    c.consumer_min_heartbeat_interval_ms = p.int(1)?
                }
                "group.consumer.max.heartbeat.interval.ms" => {
                    c.consumer_max_heartbeat_interval_ms = p.int(1)?
                }
                "group.consumer.max.size" => c.consumer_group_max_size = p.int(1)?,
                "group.consumer.assignors" => {
                    let mut names = Vec::new();
                    for part in value.split(',').filter(|s| !s.trim().is_empty()) {
                        names.push(AssignorName::parse(part).ok_or_else(|| {
                            p.invalid(&format!(
                                "unknown assignor {:?} (kraftd has uniform and range)",
                                part.trim()
                            ))
                        })?);
                    }
                    if names.is_empty() {
                        return Err(p.invalid("at least one assignor is required"));
                    }
                    c.consumer_assignors = names;
                }
                "group.coordinator.rebalance.protocols" => {
                    c.rebalance_protocols = rebalance_protocols(&p, value)?
                }
                "group.consumer.migration.policy" => {
                    c.migration_policy = match value.trim().to_ascii_lowercase().as_str() {
                        "disabled" => MigrationPolicy::Disabled,
                        "bidirectional" => MigrationPolicy::Bidirectional,
                        "upgrade" => MigrationPolicy::Upgrade,
                        "downgrade" => MigrationPolicy::Downgrade,
                        _ => {
                            return Err(
                                p.invalid("one of disabled, bidirectional, upgrade, downgrade")
                            )
                        }
                    }
                }
                "group.share.session.timeout.ms" => c.share_session_timeout_ms = p.int(1)?,
                "group.share.min.session.timeout.ms" => {
                    c.share_min_session_timeout_ms = p.int(1)?
                }
                "group.share.max.session.timeout.ms" => {
                    c.share_max_session_timeout_ms = p.int(1)?
                }
                "group.share.heartbeat.interval.ms" => c.share_heartbeat_interval_ms = p.int(1)?,
                "group.share.min.heartbeat.interval.ms" => {
                    c.share_min_heartbeat_interval_ms = p.int(1)?
                }
                "group.share.max.heartbeat.interval.ms" => {
                    c.share_max_heartbeat_interval_ms = p.int(1)?
                }
                "group.share.max.size" => {
                    let n = p.int(1)?;
                    if n > 1000 {
                        return Err(p.invalid("Value must be no more than 1000"));
                    }
                    c.share_group_max_size = n;
                }
                "group.share.assignors" => {
                    // Kafka 4.4 has one share assignor; a list naming another is refused
                    // when the coordinator starts.
                    for part in value.split(',').filter(|s| !s.trim().is_empty()) {
                        let part = part.trim();
                        if part != SHARE_ASSIGNOR
                            && part != "org.apache.kafka.coordinator.group.assignor.SimpleAssignor"
                        {
                            return Err(p.invalid(&format!(
                                "unknown share assignor {part:?} (kraftd has simple)"
                            )));
                        }
                    }
                }
                "group.share.assignment.interval.ms" => {
                    c.share_assignment_interval_ms = p.int(0)?
                }
                "group.share.min.assignment.interval.ms" => {
                    c.share_min_assignment_interval_ms = p.int(0)?
                }
                "group.share.max.assignment.interval.ms" => {
                    c.share_max_assignment_interval_ms = p.int(0)?
                }
                "group.share.initialize.retry.interval.ms" => {
                    c.share_initialize_retry_interval_ms = p.int(1)?
                }
                k if k.starts_with("group.streams.") => c.streams.set(k, &p)?,
                "offsets.retention.minutes" => c.offsets_retention_ms = p.long(1)? * 60_000,
                "offsets.retention.check.interval.ms" => {
                    c.offsets_retention_check_interval_ms = p.long(1)?
                }
                "offset.metadata.max.bytes" => c.offset_metadata_max_bytes = p.int(0)?,
                "offsets.commit.timeout.ms" => c.offset_commit_timeout_ms = p.int(1)?,
                _ => {}
            }
        }
        if c.classic_min_session_timeout_ms > c.classic_max_session_timeout_ms {
            return Err(ConfigError {
                key: "group.min.session.timeout.ms".into(),
                value: c.classic_min_session_timeout_ms.to_string(),
                reason: "must not exceed group.max.session.timeout.ms".into(),
            });
        }
        // Kafka never retries sooner than a commit may take.
        c.share_initialize_retry_interval_ms = c
            .share_initialize_retry_interval_ms
            .max(c.offset_commit_timeout_ms);
        c.check_share_bounds()?;
        c.streams.check_bounds()?;
        Ok(c)
    }

    /// Kafka's `GroupCoordinatorConfig` requirements between the `group.share.*` settings.
    fn check_share_bounds(&self) -> Result<(), ConfigError> {
        let require = |ok: bool, key: &str, value: i32, reason: &str| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError {
                    key: key.into(),
                    value: value.to_string(),
                    reason: reason.into(),
                })
            }
        };
        let (hb, min_hb, max_hb) = (
            self.share_heartbeat_interval_ms,
            self.share_min_heartbeat_interval_ms,
            self.share_max_heartbeat_interval_ms,
        );
        let (st, min_st, max_st) = (
            self.share_session_timeout_ms,
            self.share_min_session_timeout_ms,
            self.share_max_session_timeout_ms,
        );
        let (ai, min_ai, max_ai) = (
            self.share_assignment_interval_ms,
            self.share_min_assignment_interval_ms,
            self.share_max_assignment_interval_ms,
        );
        let hb_key = "group.share.heartbeat.interval.ms";
        let st_key = "group.share.session.timeout.ms";
        let ai_key = "group.share.assignment.interval.ms";
        require(
            max_hb >= min_hb,
            "group.share.max.heartbeat.interval.ms",
            max_hb,
            "must be greater than or equal to group.share.min.heartbeat.interval.ms",
        )?;
        require(
            hb >= min_hb,
            hb_key,
            hb,
            "must be greater than or equal to group.share.min.heartbeat.interval.ms",
        )?;
        require(
            hb <= max_hb,
            hb_key,
            hb,
            "must be less than or equal to group.share.max.heartbeat.interval.ms",
        )?;
        require(
            max_st >= min_st,
            "group.share.max.session.timeout.ms",
            max_st,
            "must be greater than or equal to group.share.min.session.timeout.ms",
        )?;
        require(
            st >= min_st,
            st_key,
            st,
            "must be greater than or equal to group.share.min.session.timeout.ms",
        )?;
        require(
            st <= max_st,
            st_key,
            st,
            "must be less than or equal to group.share.max.session.timeout.ms",
        )?;
        require(
            hb < st,
            hb_key,
            hb,
            "must be less than group.share.session.timeout.ms",
        )?;
        require(
            max_ai >= min_ai,
            "group.share.max.assignment.interval.ms",
            max_ai,
            "must be greater than or equal to group.share.min.assignment.interval.ms",
        )?;
        require(
            ai >= min_ai,
            ai_key,
            ai,
            "must be greater than or equal to group.share.min.assignment.interval.ms",
        )?;
        require(
            ai <= max_ai,
            ai_key,
            ai,
            "must be less than or equal to group.share.max.assignment.interval.ms",
        )
    }
}

/// Kafka 4.4's `group.streams.*` settings (`GroupCoordinatorConfig`, KIP-1071), by Kafka's
/// names and defaults; each validated as Kafka's `ConfigDef` and `verifyStreamsGroupConfigs`.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamsGroupConfig {
    /// `group.streams.session.timeout.ms`.
    pub session_timeout_ms: i32,
    /// `group.streams.min.session.timeout.ms`.
    pub min_session_timeout_ms: i32,
    /// `group.streams.max.session.timeout.ms`.
    pub max_session_timeout_ms: i32,
    /// `group.streams.heartbeat.interval.ms`.
    pub heartbeat_interval_ms: i32,
    /// `group.streams.min.heartbeat.interval.ms`.
    pub min_heartbeat_interval_ms: i32,
    /// `group.streams.max.heartbeat.interval.ms`.
    pub max_heartbeat_interval_ms: i32,
    /// `group.streams.max.size`.
    pub max_size: i32,
    /// `group.streams.num.standby.replicas`: standby tasks per active task.
    pub num_standby_replicas: i32,
    /// `group.streams.max.standby.replicas`.
    pub max_standby_replicas: i32,
    /// `group.streams.initial.rebalance.delay.ms`: a new group's first assignment waits this
    /// long so that the instances starting together join one assignment.
    pub initial_rebalance_delay_ms: i32,
    /// `group.streams.assignment.interval.ms`: a group's target assignment is computed at
    /// most this often (ASSIGNMENT_DELAYED meanwhile).
    pub assignment_interval_ms: i32,
    /// `group.streams.min.assignment.interval.ms`.
    pub min_assignment_interval_ms: i32,
    /// `group.streams.max.assignment.interval.ms`.
    pub max_assignment_interval_ms: i32,
    /// `group.streams.task.offset.interval.ms`.
    pub task_offset_interval_ms: i32,
    /// `group.streams.min.task.offset.interval.ms`.
    pub min_task_offset_interval_ms: i32,
    /// `group.streams.acceptable.recovery.lag`.
    pub acceptable_recovery_lag: i64,
}

impl Default for StreamsGroupConfig {
    fn default() -> Self {
        StreamsGroupConfig {
            session_timeout_ms: 45_000,
            min_session_timeout_ms: 45_000,
            max_session_timeout_ms: 60_000,
            heartbeat_interval_ms: 5_000,
            min_heartbeat_interval_ms: 5_000,
            max_heartbeat_interval_ms: 15_000,
            max_size: i32::MAX,
            num_standby_replicas: 0,
            max_standby_replicas: 2,
            initial_rebalance_delay_ms: 3_000,
            assignment_interval_ms: 1_000,
            min_assignment_interval_ms: 0,
            max_assignment_interval_ms: 15_000,
            task_offset_interval_ms: 60_000,
            min_task_offset_interval_ms: 15_000,
            acceptable_recovery_lag: 10_000,
        }
    }
}

impl StreamsGroupConfig {
    /// Sets one `group.streams.*` key (others of the prefix are Kafka's and not read here).
    fn set(&mut self, key: &str, p: &Property<'_>) -> Result<(), ConfigError> {
        match key {
            "group.streams.session.timeout.ms" => self.session_timeout_ms = p.int(1)?,
            "group.streams.min.session.timeout.ms" => self.min_session_timeout_ms = p.int(1)?,
            "group.streams.max.session.timeout.ms" => self.max_session_timeout_ms = p.int(1)?,
            "group.streams.heartbeat.interval.ms" => self.heartbeat_interval_ms = p.int(1)?,
            "group.streams.min.heartbeat.interval.ms" => {
                self.min_heartbeat_interval_ms = p.int(1)?
            }
            "group.streams.max.heartbeat.interval.ms" => {
                self.max_heartbeat_interval_ms = p.int(1)?
            }
            "group.streams.max.size" => self.max_size = p.int(1)?,
            "group.streams.num.standby.replicas" => self.num_standby_replicas = p.int(0)?,
            "group.streams.max.standby.replicas" => self.max_standby_replicas = p.int(0)?,
            "group.streams.initial.rebalance.delay.ms" => {
                self.initial_rebalance_delay_ms = p.int(0)?
            }
            "group.streams.assignment.interval.ms" => self.assignment_interval_ms = p.int(0)?,
            "group.streams.min.assignment.interval.ms" => {
                self.min_assignment_interval_ms = p.int(0)?
            }
            "group.streams.max.assignment.interval.ms" => {
                self.max_assignment_interval_ms = p.int(0)?
            }
            "group.streams.task.offset.interval.ms" => self.task_offset_interval_ms = p.int(1)?,
            "group.streams.min.task.offset.interval.ms" => {
                self.min_task_offset_interval_ms = p.int(1)?
            }
            "group.streams.acceptable.recovery.lag" => self.acceptable_recovery_lag = p.long(0)?,
            _ => {}
        }
        Ok(())
    }

    /// Kafka's `verifyStreamsGroupConfigs`, for the settings read here.
    fn check_bounds(&self) -> Result<(), ConfigError> {
        let require = |ok: bool, key: &str, value: i32, reason: &str| {
            if ok {
                Ok(())
            } else {
                Err(ConfigError {
                    key: key.into(),
                    value: value.to_string(),
                    reason: reason.into(),
                })
            }
        };
        let hb_key = "group.streams.heartbeat.interval.ms";
        let st_key = "group.streams.session.timeout.ms";
        require(
            self.max_heartbeat_interval_ms >= self.min_heartbeat_interval_ms,
            "group.streams.max.heartbeat.interval.ms",
            self.max_heartbeat_interval_ms,
            "must be greater than or equal to group.streams.min.heartbeat.interval.ms",
        )?;
        require(
            self.heartbeat_interval_ms >= self.min_heartbeat_interval_ms,
            hb_key,
            self.heartbeat_interval_ms,
            "must be greater than or equal to group.streams.min.heartbeat.interval.ms",
        )?;
        require(
            self.heartbeat_interval_ms <= self.max_heartbeat_interval_ms,
            hb_key,
            self.heartbeat_interval_ms,
            "must be less than or equal to group.streams.max.heartbeat.interval.ms",
        )?;
        require(
            self.max_session_timeout_ms >= self.min_session_timeout_ms,
            "group.streams.max.session.timeout.ms",
            self.max_session_timeout_ms,
            "must be greater than or equal to group.streams.min.session.timeout.ms",
        )?;
        require(
            self.session_timeout_ms >= self.min_session_timeout_ms,
            st_key,
            self.session_timeout_ms,
            "must be greater than or equal to group.streams.min.session.timeout.ms",
        )?;
        require(
            self.session_timeout_ms <= self.max_session_timeout_ms,
            st_key,
            self.session_timeout_ms,
            "must be less than or equal to group.streams.max.session.timeout.ms",
        )?;
        require(
            self.heartbeat_interval_ms < self.session_timeout_ms,
            hb_key,
            self.heartbeat_interval_ms,
            "must be less than group.streams.session.timeout.ms",
        )?;
        let ai_key = "group.streams.assignment.interval.ms";
        require(
            self.max_assignment_interval_ms >= self.min_assignment_interval_ms,
            "group.streams.max.assignment.interval.ms",
            self.max_assignment_interval_ms,
            "must be greater than or equal to group.streams.min.assignment.interval.ms",
        )?;
        require(
            self.assignment_interval_ms >= self.min_assignment_interval_ms,
            ai_key,
            self.assignment_interval_ms,
            "must be greater than or equal to group.streams.min.assignment.interval.ms",
        )?;
        require(
            self.assignment_interval_ms <= self.max_assignment_interval_ms,
            ai_key,
            self.assignment_interval_ms,
            "must be less than or equal to group.streams.max.assignment.interval.ms",
        )?;
        require(
            self.num_standby_replicas <= self.max_standby_replicas,
            "group.streams.num.standby.replicas",
            self.num_standby_replicas,
            "must be less than or equal to group.streams.max.standby.replicas",
        )?;
        require(
            self.task_offset_interval_ms >= self.min_task_offset_interval_ms,
            "group.streams.task.offset.interval.ms",
            self.task_offset_interval_ms,
            "must be greater than or equal to group.streams.min.task.offset.interval.ms",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(key: &str, value: &str) -> Result<GroupCoordinatorConfig, ConfigError> {
        GroupCoordinatorConfig::from_properties(&BTreeMap::from([(
            key.to_string(),
            value.to_string(),
        )]))
    }

    #[test]
    fn rebalance_protocols_default_list_and_kafka_checks() {
        let c = GroupCoordinatorConfig::default();
        assert!(c.rebalance_protocol_enabled("streams"));
        assert!(c.rebalance_protocol_enabled("consumer"));
        let key = "group.coordinator.rebalance.protocols";
        let c = with(key, "classic, consumer").unwrap();
        assert!(!c.rebalance_protocol_enabled("streams"));
        assert!(with(key, "classic,streams,share").is_ok());
        let e = with(key, "consumer,streams").unwrap_err();
        assert_eq!(
            e.reason,
            "Disabling the 'classic' protocol is not supported."
        );
        assert!(with(key, "classic,STREAMS").is_err());
        assert!(with(key, "").is_err());
    }
}
