//! The group configs: Kafka's `GroupConfig.CONFIG_DEF` ([`GROUP_CONFIGS`], set on a GROUP
//! resource) and their broker side: each key's broker synonym (Kafka's
//! `GroupConfig.ALL_GROUP_CONFIG_SYNONYMS`, whose value is the key's default on that broker),
//! the node's bounds a group's value must lie within (`GroupConfig.validate`'s
//! `validateValues`, with the controller's own settings as Kafka's controller has them), and
//! `share.auto.offset.reset`'s validator (`ShareGroupAutoOffsetResetStrategy.Validator`).

use std::collections::BTreeMap;

use super::{def, int, long, ConfigDef, ConfigType, ANY_LIST, BOOLEAN, STRING};

/// The node settings [`GroupConfigBounds`] reads, with Kafka 4.4.0's defaults.
pub const GROUP_CONFIG_BOUNDS: &[(&str, i32)] = &[
    ("group.consumer.session.timeout.ms", 45_000),
    ("group.consumer.min.session.timeout.ms", 45_000),
    ("group.consumer.max.session.timeout.ms", 60_000),
    ("group.consumer.heartbeat.interval.ms", 5_000),
    ("group.consumer.min.heartbeat.interval.ms", 5_000),
    ("group.consumer.max.heartbeat.interval.ms", 15_000),
    ("group.consumer.min.assignment.interval.ms", 0),
    ("group.consumer.max.assignment.interval.ms", 15_000),
    ("group.share.session.timeout.ms", 45_000),
    ("group.share.min.session.timeout.ms", 45_000),
    ("group.share.max.session.timeout.ms", 60_000),
    ("group.share.heartbeat.interval.ms", 5_000),
    ("group.share.min.heartbeat.interval.ms", 5_000),
    ("group.share.max.heartbeat.interval.ms", 15_000),
    ("group.share.min.record.lock.duration.ms", 15_000),
    ("group.share.max.record.lock.duration.ms", 60_000),
    ("group.share.min.delivery.count.limit", 2),
    ("group.share.max.delivery.count.limit", 10),
    ("group.share.min.partition.max.record.locks", 100),
    ("group.share.max.partition.max.record.locks", 4_000),
    ("group.share.min.assignment.interval.ms", 0),
    ("group.share.max.assignment.interval.ms", 15_000),
    ("group.streams.session.timeout.ms", 45_000),
    ("group.streams.min.session.timeout.ms", 45_000),
    ("group.streams.max.session.timeout.ms", 60_000),
    ("group.streams.heartbeat.interval.ms", 5_000),
    ("group.streams.min.heartbeat.interval.ms", 5_000),
    ("group.streams.max.heartbeat.interval.ms", 15_000),
    ("group.streams.max.standby.replicas", 2),
    ("group.streams.min.assignment.interval.ms", 0),
    ("group.streams.max.assignment.interval.ms", 15_000),
    ("group.streams.min.task.offset.interval.ms", 15_000),
    ("group.streams.max.warmup.replicas", 20),
];

/// The broker config a group config falls back to (`GroupConfig.brokerSynonym`), if any.
pub fn group_config_synonym(name: &str) -> Option<&'static str> {
    Some(match name {
        "consumer.session.timeout.ms" => "group.consumer.session.timeout.ms",
        "consumer.heartbeat.interval.ms" => "group.consumer.heartbeat.interval.ms",
        "consumer.assignment.interval.ms" => "group.consumer.assignment.interval.ms",
        "consumer.assignor.offload.enable" => "group.consumer.assignor.offload.enable",
        "share.session.timeout.ms" => "group.share.session.timeout.ms",
        "share.heartbeat.interval.ms" => "group.share.heartbeat.interval.ms",
        "share.record.lock.duration.ms" => "group.share.record.lock.duration.ms",
        "share.delivery.count.limit" => "group.share.delivery.count.limit",
        "share.partition.max.record.locks" => "group.share.partition.max.record.locks",
        "share.assignment.interval.ms" => "group.share.assignment.interval.ms",
        "share.assignor.offload.enable" => "group.share.assignor.offload.enable",
        "streams.session.timeout.ms" => "group.streams.session.timeout.ms",
        "streams.heartbeat.interval.ms" => "group.streams.heartbeat.interval.ms",
        "streams.num.standby.replicas" => "group.streams.num.standby.replicas",
        "streams.initial.rebalance.delay.ms" => "group.streams.initial.rebalance.delay.ms",
        "streams.assignment.interval.ms" => "group.streams.assignment.interval.ms",
        "streams.assignor.offload.enable" => "group.streams.assignor.offload.enable",
        "streams.task.offset.interval.ms" => "group.streams.task.offset.interval.ms",
        "streams.num.warmup.replicas" => "group.streams.num.warmup.replicas",
        "streams.rack.aware.assignment.tags" => "group.streams.rack.aware.assignment.tags",
        "streams.acceptable.recovery.lag" => "group.streams.acceptable.recovery.lag",
        "streams.assignor.name" => "group.streams.assignors",
        _ => return None,
    })
}

/// Kafka's default `group.streams.assignors`: its one assignor, which kraftd's streams
/// groups run (the coordinator's `STREAMS_ASSIGNOR_NAME`).
pub const STREAMS_ASSIGNORS_DEFAULT: &str = "sticky";

/// The node's bounds on group configs: its `group.consumer.*`, `group.share.*` and
/// `group.streams.*` minimums, maximums and defaults ([`GROUP_CONFIG_BOUNDS`]) and its
/// streams assignors, as Kafka's `GroupCoordinatorConfig` and `ShareGroupConfig` give
/// `GroupConfig.validate`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfigBounds {
    values: BTreeMap<&'static str, i32>,
    /// `group.streams.assignors`' names.
    pub streams_assignors: Vec<String>,
}

impl Default for GroupConfigBounds {
    fn default() -> Self {
        GroupConfigBounds {
            values: GROUP_CONFIG_BOUNDS.iter().copied().collect(),
            streams_assignors: vec![STREAMS_ASSIGNORS_DEFAULT.to_string()],
        }
    }
}

impl GroupConfigBounds {
    /// Sets one of [`GROUP_CONFIG_BOUNDS`]' settings; any other key is ignored.
    pub fn set(&mut self, key: &str, value: i32) {
        if let Some((k, _)) = GROUP_CONFIG_BOUNDS.iter().find(|(k, _)| *k == key) {
            self.values.insert(k, value);
        }
    }

    /// The node's value of one of [`GROUP_CONFIG_BOUNDS`]' settings.
    pub fn get(&self, key: &str) -> i32 {
        self.values.get(key).copied().unwrap_or_default()
    }

    /// Checks a group's whole set of overrides (each value already valid for its key) as
    /// Kafka's `GroupConfig.validate` does after parsing: the rack tags without duplicates,
    /// each bounded value within this node's bounds, the streams assignor one of the node's,
    /// each session timeout above its heartbeat interval, and no DLQ topic named `__...`.
    /// The error is Kafka's `InvalidConfigurationException` message.
    pub fn validate(&self, configs: &BTreeMap<String, String>) -> Result<(), String> {
        let int = |key: &str| configs.get(key).and_then(|v| v.trim().parse::<i32>().ok());
        if let Some(raw) = configs.get("streams.rack.aware.assignment.tags") {
            let trimmed = raw.trim();
            let tags: Vec<&str> = if trimmed.is_empty() {
                Vec::new()
            } else {
                trimmed.split(',').map(str::trim).collect()
            };
            let distinct: std::collections::BTreeSet<&str> = tags.iter().copied().collect();
            if distinct.len() != tags.len() {
                return Err(
                    "streams.rack.aware.assignment.tags must not contain duplicate tag keys."
                        .into(),
                );
            }
        }
        let range = |key: &str, min: &str, max: &str| -> Result<(), String> {
            let (min, max) = (self.get(min), self.get(max));
            match int(key) {
                Some(v) if v < min || v > max => Err(format!(
                    "{key} must be in the range {min} to {max} inclusive."
                )),
                _ => Ok(()),
            }
        };
        let at_most = |key: &str, max: &str| -> Result<(), String> {
            let max = self.get(max);
            match int(key) {
                Some(v) if v > max => Err(format!("{key} must be less than or equal to {max}")),
                _ => Ok(()),
            }
        };
        for group in ["consumer", "share"] {
            range(
                &format!("{group}.heartbeat.interval.ms"),
                &format!("group.{group}.min.heartbeat.interval.ms"),
                &format!("group.{group}.max.heartbeat.interval.ms"),
            )?;
            range(
                &format!("{group}.session.timeout.ms"),
                &format!("group.{group}.min.session.timeout.ms"),
                &format!("group.{group}.max.session.timeout.ms"),
            )?;
            if group == "consumer" {
                range(
                    "consumer.assignment.interval.ms",
                    "group.consumer.min.assignment.interval.ms",
                    "group.consumer.max.assignment.interval.ms",
                )?;
            }
        }
        range(
            "share.record.lock.duration.ms",
            "group.share.min.record.lock.duration.ms",
            "group.share.max.record.lock.duration.ms",
        )?;
        range(
            "share.delivery.count.limit",
            "group.share.min.delivery.count.limit",
            "group.share.max.delivery.count.limit",
        )?;
        range(
            "share.partition.max.record.locks",
            "group.share.min.partition.max.record.locks",
            "group.share.max.partition.max.record.locks",
        )?;
        range(
            "share.assignment.interval.ms",
            "group.share.min.assignment.interval.ms",
            "group.share.max.assignment.interval.ms",
        )?;
        range(
            "streams.heartbeat.interval.ms",
            "group.streams.min.heartbeat.interval.ms",
            "group.streams.max.heartbeat.interval.ms",
        )?;
        range(
            "streams.session.timeout.ms",
            "group.streams.min.session.timeout.ms",
            "group.streams.max.session.timeout.ms",
        )?;
        at_most(
            "streams.num.standby.replicas",
            "group.streams.max.standby.replicas",
        )?;
        range(
            "streams.assignment.interval.ms",
            "group.streams.min.assignment.interval.ms",
            "group.streams.max.assignment.interval.ms",
        )?;
        let min = self.get("group.streams.min.task.offset.interval.ms");
        if int("streams.task.offset.interval.ms").is_some_and(|v| v < min) {
            return Err(format!(
                "streams.task.offset.interval.ms must be greater than or equal to {min}"
            ));
        }
        at_most(
            "streams.num.warmup.replicas",
            "group.streams.max.warmup.replicas",
        )?;
        if let Some(name) = configs.get("streams.assignor.name") {
            let name = name.trim();
            if !self.streams_assignors.iter().any(|a| a == name) {
                return Err(format!(
                    "streams.assignor.name '{name}' is not a registered task assignor. \
                     Registered assignors are: [{}].",
                    self.streams_assignors.join(", ")
                ));
            }
        }
        for group in ["consumer", "share", "streams"] {
            let session_key = format!("{group}.session.timeout.ms");
            let heartbeat_key = format!("{group}.heartbeat.interval.ms");
            let (session, heartbeat) = (int(&session_key), int(&heartbeat_key));
            if session.is_none() && heartbeat.is_none() {
                continue;
            }
            let session =
                session.unwrap_or_else(|| self.get(&format!("group.{group}.session.timeout.ms")));
            let heartbeat = heartbeat
                .unwrap_or_else(|| self.get(&format!("group.{group}.heartbeat.interval.ms")));
            if session <= heartbeat {
                return Err(format!(
                    "{session_key} must be greater than {heartbeat_key}"
                ));
            }
        }
        if configs
            .get("errors.deadletterqueue.topic.name")
            .is_some_and(|t| t.trim().starts_with("__"))
        {
            return Err(
                "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'".into(),
            );
        }
        Ok(())
    }
}

/// Why `value` (trimmed) is not a share group's auto offset reset strategy, as Kafka's
/// `ShareGroupAutoOffsetResetStrategy.fromString`: `earliest`, `latest` (lower case), or
/// `by_duration:` and a non-negative ISO-8601 duration (`java.time.Duration.parse`).
pub(super) fn check_share_auto_offset_reset(value: &str) -> Result<(), ()> {
    match value {
        "earliest" | "latest" => Ok(()),
        _ => match value.strip_prefix("by_duration:") {
            Some(duration) => match parse_iso_duration_nanos(duration) {
                Some(nanos) if nanos >= 0 => Ok(()),
                _ => Err(()),
            },
            None => Err(()),
        },
    }
}

/// An ISO-8601 duration in nanoseconds as `java.time.Duration.parse` reads it
/// (`[-+]PnDTnHnMn.nS`, case-insensitive, each number signed, at least one part, a
/// fraction of up to 9 digits on the seconds only); `None` if it does not parse or a part
/// overflows a `long` of seconds.
fn parse_iso_duration_nanos(text: &str) -> Option<i128> {
    // One signed number; returns it and what follows.
    fn number(s: &str) -> Option<(i128, &str)> {
        let sign_len = usize::from(s.starts_with(['-', '+']));
        let digits = s[sign_len..].bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        let n: i64 = s[..sign_len + digits].parse().ok()?;
        Some((i128::from(n), &s[sign_len + digits..]))
    }
    let upper = text.to_ascii_uppercase();
    let (negate, rest) = match upper.as_bytes().first()? {
        b'-' => (true, &upper[1..]),
        b'+' => (false, &upper[1..]),
        _ => (false, upper.as_str()),
    };
    let rest = rest.strip_prefix('P')?;
    let (date, time) = match rest.split_once('T') {
        Some((_, "")) => return None,
        Some((d, t)) => (d, Some(t)),
        None => (rest, None),
    };
    let mut seconds: i128 = 0;
    let mut nanos: i128 = 0;
    let mut parts = 0;
    let mut add = |n: i128, unit: i128| -> Option<()> {
        let v = n.checked_mul(unit)?;
        i64::try_from(v).ok()?;
        seconds += v;
        parts += 1;
        Some(())
    };
    if !date.is_empty() {
        let (days, after) = number(date)?;
        if after != "D" {
            return None;
        }
        add(days, 86_400)?;
    }
    if let Some(mut t) = time {
        for (unit, unit_seconds) in [('H', 3_600), ('M', 60)] {
            if let Some((n, after)) = number(t) {
                if let Some(after) = after.strip_prefix(unit) {
                    add(n, unit_seconds)?;
                    t = after;
                }
            }
        }
        if !t.is_empty() {
            let (n, after) = number(t)?;
            let after = match after.strip_prefix(['.', ',']) {
                Some(frac) => {
                    let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
                    if digits > 9 {
                        return None;
                    }
                    let padded = format!("{:0<9}", &frac[..digits]);
                    let value: i128 = padded.parse().ok()?;
                    nanos = if t.starts_with('-') { -value } else { value };
                    &frac[digits..]
                }
                None => after,
            };
            if after != "S" {
                return None;
            }
            add(n, 1)?;
        }
    }
    if parts == 0 {
        return None;
    }
    let total = seconds * 1_000_000_000 + nanos;
    i64::try_from(seconds).ok()?;
    Some(if negate { -total } else { total })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn share_auto_offset_reset_accepts_kafkas_strategies_only() {
        for ok in [
            "earliest",
            "latest",
            "by_duration:PT1H",
            "by_duration:P1D",
            "by_duration:PT0S",
            "by_duration:pt1.5s",
            "by_duration:P1DT2H3M4.5S",
            "by_duration:-PT-1H",
        ] {
            assert_eq!(check_share_auto_offset_reset(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "none",
            "EARLIEST",
            "by_duration",
            "by_duration:",
            "by_duration:P",
            "by_duration:PT",
            "by_duration:-PT1H",
            "by_duration:PT-1S",
            "by_duration:1H",
            "by_duration:P1H",
            "by_duration:PT1.1234567891S",
            "BY_DURATION:PT1H",
        ] {
            assert_eq!(check_share_auto_offset_reset(bad), Err(()), "{bad}");
        }
    }

    fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn group_values_must_lie_within_the_nodes_bounds() {
        let bounds = GroupConfigBounds::default();
        assert_eq!(
            bounds.validate(&configs(&[("share.record.lock.duration.ms", "1000")])),
            Err(
                "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."
                    .into()
            )
        );
        assert_eq!(
            bounds.validate(&configs(&[("share.record.lock.duration.ms", "15000")])),
            Ok(())
        );
        assert_eq!(
            bounds.validate(&configs(&[("consumer.session.timeout.ms", "70000")])),
            Err(
                "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.".into()
            )
        );
        assert_eq!(
            bounds.validate(&configs(&[("share.delivery.count.limit", "11")])),
            Err("share.delivery.count.limit must be in the range 2 to 10 inclusive.".into())
        );
        assert_eq!(
            bounds.validate(&configs(&[("streams.num.standby.replicas", "3")])),
            Err("streams.num.standby.replicas must be less than or equal to 2".into())
        );
        assert_eq!(
            bounds.validate(&configs(&[("streams.task.offset.interval.ms", "10")])),
            Err("streams.task.offset.interval.ms must be greater than or equal to 15000".into())
        );
        assert_eq!(
            bounds.validate(&configs(&[("streams.assignor.name", "other")])),
            Err(
                "streams.assignor.name 'other' is not a registered task assignor. \
                 Registered assignors are: [sticky]."
                    .into()
            )
        );
        assert_eq!(
            bounds.validate(&configs(&[("errors.deadletterqueue.topic.name", "__dlq")])),
            Err(
                "errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'".into()
            )
        );
        assert_eq!(
            bounds.validate(&configs(&[("streams.rack.aware.assignment.tags", "a,b,a")])),
            Err("streams.rack.aware.assignment.tags must not contain duplicate tag keys.".into())
        );
    }

    #[test]
    fn session_timeout_must_exceed_heartbeat_with_the_nodes_defaults() {
        let mut bounds = GroupConfigBounds::default();
        bounds.set("group.share.min.heartbeat.interval.ms", 1000);
        bounds.set("group.share.max.heartbeat.interval.ms", 60_000);
        assert_eq!(
            bounds.validate(&configs(&[("share.heartbeat.interval.ms", "45000")])),
            Err("share.session.timeout.ms must be greater than share.heartbeat.interval.ms".into())
        );
        assert_eq!(
            bounds.validate(&configs(&[("share.heartbeat.interval.ms", "44999")])),
            Ok(())
        );
    }
}
