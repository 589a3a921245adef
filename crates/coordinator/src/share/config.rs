//! `ShareCoordinatorConfig`: Kafka's share coordinator settings (`share.coordinator.*`), by
//! Kafka's names and with Kafka 4.4's defaults and validators. The broker reads them from its
//! properties file ([`ShareCoordinatorConfig::from_properties`]); a value that does not parse
//! is refused with the key and the value named.

use std::collections::BTreeMap;

use crate::config::{ConfigError, Property};

/// The settings the share coordinator's shards and runtime run by; Kafka's names in the
/// field docs.
#[derive(Debug, Clone, PartialEq)]
pub struct ShareCoordinatorConfig {
    /// `share.coordinator.state.topic.num.partitions`.
    pub state_topic_partitions: i32,
    /// `share.coordinator.state.topic.replication.factor`.
    pub state_topic_replication_factor: i16,
    /// `share.coordinator.state.topic.min.isr`.
    pub state_topic_min_isr: i16,
    /// `share.coordinator.state.topic.segment.bytes`.
    pub state_topic_segment_bytes: i32,
    /// `share.coordinator.snapshot.update.records.per.snapshot`: how many ShareUpdate records
    /// a share partition gets between two ShareSnapshot records (a load replays at most this
    /// many updates on top of a snapshot).
    pub snapshot_update_records_per_snapshot: i32,
    /// `share.coordinator.cold.partition.snapshot.interval.ms` (internal): how often share
    /// partitions not written for this long get a fresh snapshot, so the records before it
    /// become redundant.
    pub cold_partition_snapshot_interval_ms: i64,
    /// `share.coordinator.state.topic.prune.interval.ms` (internal): how often each shard
    /// deletes the records of its partition that no share partition's state needs.
    pub state_topic_prune_interval_ms: i64,
}

impl Default for ShareCoordinatorConfig {
    fn default() -> Self {
        ShareCoordinatorConfig {
            state_topic_partitions: 50,
            state_topic_replication_factor: 3,
            state_topic_min_isr: 2,
            state_topic_segment_bytes: 104_857_600,
            snapshot_update_records_per_snapshot: 500,
            cold_partition_snapshot_interval_ms: 300_000,
            state_topic_prune_interval_ms: 300_000,
        }
    }
}

impl ShareCoordinatorConfig {
    /// Every key [`ShareCoordinatorConfig::from_properties`] reads.
    pub const KEYS: &'static [&'static str] = &[
        "share.coordinator.state.topic.num.partitions",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
        "share.coordinator.state.topic.segment.bytes",
        "share.coordinator.snapshot.update.records.per.snapshot",
        "share.coordinator.cold.partition.snapshot.interval.ms",
        "share.coordinator.state.topic.prune.interval.ms",
    ];

    /// The settings from a properties map (Kafka's defaults for what it lacks), each with
    /// the validator Kafka 4.4's `ShareCoordinatorConfig.CONFIG_DEF` gives it.
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut c = ShareCoordinatorConfig::default();
        for (key, value) in props {
            let p = Property::new(key, value);
            match key.as_str() {
                "share.coordinator.state.topic.num.partitions" => {
                    c.state_topic_partitions = p.int(1)?
                }
                "share.coordinator.state.topic.replication.factor" => {
                    c.state_topic_replication_factor = p.short(1)?
                }
                "share.coordinator.state.topic.min.isr" => c.state_topic_min_isr = p.short(1)?,
                "share.coordinator.state.topic.segment.bytes" => {
                    c.state_topic_segment_bytes = p.int(1)?
                }
                "share.coordinator.snapshot.update.records.per.snapshot" => {
                    c.snapshot_update_records_per_snapshot = p.int_between(0, 500)?
                }
                "share.coordinator.cold.partition.snapshot.interval.ms" => {
                    c.cold_partition_snapshot_interval_ms = i64::from(p.int(1)?)
                }
                "share.coordinator.state.topic.prune.interval.ms" => {
                    c.state_topic_prune_interval_ms = i64::from(p.int(1)?)
                }
                _ => {}
            }
        }
        Ok(c)
    }
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
    fn defaults_are_kafkas_and_bad_values_are_named() {
        let c = ShareCoordinatorConfig::from_properties(&BTreeMap::new()).unwrap();
        assert_eq!(c, ShareCoordinatorConfig::default());
        assert_eq!(c.state_topic_partitions, 50);
        assert_eq!(c.state_topic_replication_factor, 3);
        assert_eq!(c.state_topic_min_isr, 2);
        assert_eq!(c.state_topic_segment_bytes, 104_857_600);
        assert_eq!(c.snapshot_update_records_per_snapshot, 500);
        assert_eq!(c.cold_partition_snapshot_interval_ms, 300_000);
        assert_eq!(c.state_topic_prune_interval_ms, 300_000);

        let c = ShareCoordinatorConfig::from_properties(&props(&[
            ("share.coordinator.state.topic.num.partitions", "3"),
            (
                "share.coordinator.snapshot.update.records.per.snapshot",
                "0",
            ),
        ]))
        .unwrap();
        assert_eq!(
            (
                c.state_topic_partitions,
                c.snapshot_update_records_per_snapshot
            ),
            (3, 0)
        );

        for (key, value) in [
            (
                "share.coordinator.snapshot.update.records.per.snapshot",
                "501",
            ),
            (
                "share.coordinator.snapshot.update.records.per.snapshot",
                "-1",
            ),
            ("share.coordinator.state.topic.min.isr", "0"),
            ("share.coordinator.state.topic.replication.factor", "40000"),
            (
                "share.coordinator.cold.partition.snapshot.interval.ms",
                "soon",
            ),
        ] {
            let e = ShareCoordinatorConfig::from_properties(&props(&[(key, value)])).unwrap_err();
            assert_eq!((e.key.as_str(), e.value.as_str()), (key, value));
        }
    }
}
