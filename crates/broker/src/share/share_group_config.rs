//! `ShareGroupConfig`: the broker's `group.share.*` settings the share-partition leaders
//! read, by Kafka 4.4's names, defaults and validators (the definitions are in the config
//! table, `kraftd_controller`'s `config_defs`), with the cross-checks Kafka's
//! `ShareGroupConfig.validate` makes at start-up (`group.share.max.share.sessions` at least
//! `group.share.max.size`, the group coordinator's setting, read where that coordinator reads
//! it: `GroupCoordinatorConfig`). A group's dynamic `share.*` configs
//! override the defaults per group, within the min/max bounds.

use std::collections::BTreeMap;

use kraftd_coordinator::config::ConfigError;
use kraftd_coordinator::group::GroupCoordinatorConfig;

/// The broker's share-group settings (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareGroupConfig {
    /// `group.share.partition.max.record.locks`: in-flight records per share partition.
    pub partition_max_record_locks: i32,
    /// `group.share.min.partition.max.record.locks`.
    pub min_partition_max_record_locks: i32,
    /// `group.share.max.partition.max.record.locks`.
    pub max_partition_max_record_locks: i32,
    /// `group.share.delivery.count.limit`: deliveries before a record is archived.
    pub delivery_count_limit: i32,
    /// `group.share.min.delivery.count.limit`.
    pub min_delivery_count_limit: i32,
    /// `group.share.max.delivery.count.limit`.
    pub max_delivery_count_limit: i32,
    /// `group.share.record.lock.duration.ms`: how long an acquisition lasts.
    pub record_lock_duration_ms: i32,
    /// `group.share.min.record.lock.duration.ms`.
    pub min_record_lock_duration_ms: i32,
    /// `group.share.max.record.lock.duration.ms`.
    pub max_record_lock_duration_ms: i32,
    /// `group.share.max.share.sessions`: share sessions per broker.
    pub max_share_sessions: i32,
}

impl Default for ShareGroupConfig {
    /// Kafka 4.4's defaults.
    fn default() -> Self {
        ShareGroupConfig {
            partition_max_record_locks: 2000,
            min_partition_max_record_locks: 100,
            max_partition_max_record_locks: 4000,
            delivery_count_limit: 5,
            min_delivery_count_limit: 2,
            max_delivery_count_limit: 10,
            record_lock_duration_ms: 30_000,
            min_record_lock_duration_ms: 15_000,
            max_record_lock_duration_ms: 60_000,
            max_share_sessions: 2000,
        }
    }
}

impl ShareGroupConfig {
    /// Every key [`ShareGroupConfig::from_properties`] reads.
    pub const KEYS: &'static [&'static str] = &[
        "group.share.partition.max.record.locks",
        "group.share.min.partition.max.record.locks",
        "group.share.max.partition.max.record.locks",
        "group.share.delivery.count.limit",
        "group.share.min.delivery.count.limit",
        "group.share.max.delivery.count.limit",
        "group.share.record.lock.duration.ms",
        "group.share.min.record.lock.duration.ms",
        "group.share.max.record.lock.duration.ms",
        "group.share.max.share.sessions",
    ];

    /// The settings from a properties map, Kafka's defaults for what it lacks; a value
    /// outside its key's range, a default outside its min/max bounds, or fewer share
    /// sessions than members a share group may have, is refused.
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut c = ShareGroupConfig::default();
        for (key, value) in props {
            let field = match key.as_str() {
                "group.share.partition.max.record.locks" => {
                    (&mut c.partition_max_record_locks, 100, 10_000)
                }
                "group.share.min.partition.max.record.locks" => {
                    (&mut c.min_partition_max_record_locks, 100, 2000)
                }
                "group.share.max.partition.max.record.locks" => {
                    (&mut c.max_partition_max_record_locks, 2000, 10_000)
                }
                "group.share.delivery.count.limit" => (&mut c.delivery_count_limit, 2, 10),
                "group.share.min.delivery.count.limit" => (&mut c.min_delivery_count_limit, 2, 5),
                "group.share.max.delivery.count.limit" => (&mut c.max_delivery_count_limit, 5, 25),
                "group.share.record.lock.duration.ms" => {
                    (&mut c.record_lock_duration_ms, 1000, 3_600_000)
                }
                "group.share.min.record.lock.duration.ms" => {
                    (&mut c.min_record_lock_duration_ms, 1000, 30_000)
                }
                "group.share.max.record.lock.duration.ms" => {
                    (&mut c.max_record_lock_duration_ms, 30_000, 3_600_000)
                }
                "group.share.max.share.sessions" => (&mut c.max_share_sessions, 1, i32::MAX),
                _ => continue,
            };
            *field.0 = int_between(key, value, field.1, field.2)?;
        }
        let share_group_max_size =
            GroupCoordinatorConfig::from_properties(props)?.share_group_max_size;
        c.validate(props, share_group_max_size)?;
        Ok(c)
    }

    /// Kafka's `ShareGroupConfig.validate`: each default within its bounds, and a session
    /// for every member of a full share group (each member holds one share session per
    /// broker it fetches from).
    fn validate(
        &self,
        props: &BTreeMap<String, String>,
        share_group_max_size: i32,
    ) -> Result<(), ConfigError> {
        let checks = [
            (
                self.max_delivery_count_limit >= self.delivery_count_limit,
                "group.share.max.delivery.count.limit",
                "group.share.delivery.count.limit",
            ),
            (
                self.delivery_count_limit >= self.min_delivery_count_limit,
                "group.share.delivery.count.limit",
                "group.share.min.delivery.count.limit",
            ),
            (
                self.max_partition_max_record_locks >= self.partition_max_record_locks,
                "group.share.max.partition.max.record.locks",
                "group.share.partition.max.record.locks",
            ),
            (
                self.partition_max_record_locks >= self.min_partition_max_record_locks,
                "group.share.partition.max.record.locks",
                "group.share.min.partition.max.record.locks",
            ),
            (
                self.record_lock_duration_ms >= self.min_record_lock_duration_ms,
                "group.share.record.lock.duration.ms",
                "group.share.min.record.lock.duration.ms",
            ),
            (
                self.max_record_lock_duration_ms >= self.record_lock_duration_ms,
                "group.share.max.record.lock.duration.ms",
                "group.share.record.lock.duration.ms",
            ),
            (
                self.max_share_sessions >= share_group_max_size,
                "group.share.max.share.sessions",
                "group.share.max.size",
            ),
        ];
        for (ok, greater, lesser) in checks {
            if !ok {
                return Err(ConfigError {
                    key: greater.to_owned(),
                    value: props.get(greater).cloned().unwrap_or_default(),
                    reason: format!("{greater} must be greater than or equal to {lesser}"),
                });
            }
        }
        Ok(())
    }
}

/// An INT within Kafka's `Range.between(min, max)`.
fn int_between(key: &str, value: &str, min: i32, max: i32) -> Result<i32, ConfigError> {
    let invalid = |reason: String| ConfigError {
        key: key.to_owned(),
        value: value.to_owned(),
        reason,
    };
    let v: i64 = value
        .trim()
        .parse()
        .map_err(|_| invalid("not an integer".to_owned()))?;
    if v < min as i64 || v > max as i64 {
        return Err(invalid(format!("must be in [{min}, {max}]")));
    }
    Ok(v as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_are_kafkas() {
        let c = ShareGroupConfig::from_properties(&BTreeMap::new()).expect("defaults");
        assert_eq!(c, ShareGroupConfig::default());
        assert_eq!(c.partition_max_record_locks, 2000);
        assert_eq!(c.delivery_count_limit, 5);
        assert_eq!(c.record_lock_duration_ms, 30_000);
        assert_eq!(c.max_share_sessions, 2000);
    }

    #[test]
    fn values_are_read_within_their_ranges() {
        let c = ShareGroupConfig::from_properties(&props(&[
            ("group.share.partition.max.record.locks", "500"),
            ("group.share.delivery.count.limit", "3"),
            ("group.share.record.lock.duration.ms", "20000"),
            ("group.share.max.share.sessions", "7"),
            ("group.share.max.size", "7"),
        ]))
        .expect("valid");
        assert_eq!(c.partition_max_record_locks, 500);
        assert_eq!(c.delivery_count_limit, 3);
        assert_eq!(c.record_lock_duration_ms, 20_000);
        assert_eq!(c.max_share_sessions, 7);
        let e = ShareGroupConfig::from_properties(&props(&[(
            "group.share.delivery.count.limit",
            "11",
        )]))
        .unwrap_err();
        assert_eq!(e.key, "group.share.delivery.count.limit");
        let e =
            ShareGroupConfig::from_properties(&props(&[("group.share.max.share.sessions", "0")]))
                .unwrap_err();
        assert_eq!(e.reason, "must be in [1, 2147483647]");
    }

    #[test]
    fn defaults_must_sit_within_their_bounds() {
        let e = ShareGroupConfig::from_properties(&props(&[(
            "group.share.record.lock.duration.ms",
            "10000",
        )]))
        .unwrap_err();
        assert_eq!(
            e.reason,
            "group.share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"
        );
        let e = ShareGroupConfig::from_properties(&props(&[(
            "group.share.partition.max.record.locks",
            "5000",
        )]))
        .unwrap_err();
        assert_eq!(e.key, "group.share.max.partition.max.record.locks");
    }

    /// Kafka refuses fewer share sessions than a share group's members may number.
    #[test]
    fn max_share_sessions_must_cover_the_max_share_group_size() {
        let e =
            ShareGroupConfig::from_properties(&props(&[("group.share.max.share.sessions", "199")]))
                .unwrap_err();
        assert_eq!(e.key, "group.share.max.share.sessions");
        assert_eq!(e.value, "199");
        assert_eq!(
            e.reason,
            "group.share.max.share.sessions must be greater than or equal to group.share.max.size"
        );
        let c = ShareGroupConfig::from_properties(&props(&[
            ("group.share.max.share.sessions", "10"),
            ("group.share.max.size", "10"),
        ]))
        .expect("as many sessions as members");
        assert_eq!(c.max_share_sessions, 10);
        let e = ShareGroupConfig::from_properties(&props(&[
            ("group.share.max.share.sessions", "500"),
            ("group.share.max.size", "1000"),
        ]))
        .unwrap_err();
        assert_eq!(e.key, "group.share.max.share.sessions");
    }
}
