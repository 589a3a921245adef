//! `TransactionCoordinatorConfig`: Kafka's transaction coordinator settings, by Kafka's names
//! and with Kafka 4.4's defaults. The broker reads them from its properties file
//! ([`TransactionCoordinatorConfig::from_properties`]); a value that does not parse is refused
//! with the key and the value named.

use std::collections::BTreeMap;

use crate::config::{ConfigError, Property};

/// The settings one shard runs by; Kafka's names in the field docs.
#[derive(Debug, Clone, PartialEq)]
pub struct TransactionCoordinatorConfig {
    /// `transaction.state.log.num.partitions`.
    pub state_log_partitions: i32,
    /// `transaction.state.log.replication.factor`.
    pub state_log_replication_factor: i16,
    /// `transaction.state.log.min.isr`.
    pub state_log_min_isr: i32,
    /// `transaction.state.log.segment.bytes`.
    pub state_log_segment_bytes: i32,
    /// `transaction.max.timeout.ms`: the largest `transaction.timeout.ms` a producer may ask.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: an idle transactional id (Empty, CompleteCommit,
    /// CompleteAbort) is removed this long after its last update.
    pub transactional_id_expiration_ms: i64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    pub abort_timed_out_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`.
    pub remove_expired_interval_ms: i64,
    /// The largest record batch the shard may write in one operation (the state topic's
    /// `max.message.bytes`): an operation whose records exceed it fails and changes nothing.
    pub max_batch_bytes: usize,
}

impl Default for TransactionCoordinatorConfig {
    fn default() -> Self {
        TransactionCoordinatorConfig {
            state_log_partitions: 50,
            state_log_replication_factor: 3,
            state_log_min_isr: 2,
            state_log_segment_bytes: 104_857_600,
            max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            abort_timed_out_interval_ms: 10_000,
            remove_expired_interval_ms: 3_600_000,
            max_batch_bytes: 1_048_588,
        }
    }
}

impl TransactionCoordinatorConfig {
    /// Every key [`TransactionCoordinatorConfig::from_properties`] reads.
    pub const KEYS: &'static [&'static str] = &[
        "transaction.state.log.num.partitions",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "transaction.state.log.segment.bytes",
        "transaction.max.timeout.ms",
        "transactional.id.expiration.ms",
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "transaction.remove.expired.transaction.cleanup.interval.ms",
    ];

    /// The settings from a properties map (Kafka's defaults for what it lacks).
    pub fn from_properties(props: &BTreeMap<String, String>) -> Result<Self, ConfigError> {
        let mut c = TransactionCoordinatorConfig::default();
        for (key, value) in props {
            let p = Property::new(key, value);
            match key.as_str() {
                "transaction.state.log.num.partitions" => c.state_log_partitions = p.int(1)?,
                "transaction.state.log.replication.factor" => {
                    c.state_log_replication_factor = p.short(1)?
                }
                "transaction.state.log.min.isr" => c.state_log_min_isr = p.int(1)?,
                "transaction.state.log.segment.bytes" => c.state_log_segment_bytes = p.int(1)?,
                "transaction.max.timeout.ms" => c.max_timeout_ms = p.int(1)?,
                "transactional.id.expiration.ms" => {
                    c.transactional_id_expiration_ms = i64::from(p.int(1)?)
                }
                "transaction.abort.timed.out.transaction.cleanup.interval.ms" => {
                    c.abort_timed_out_interval_ms = i64::from(p.int(1)?)
                }
                "transaction.remove.expired.transaction.cleanup.interval.ms" => {
                    c.remove_expired_interval_ms = i64::from(p.int(1)?)
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

    #[test]
    fn defaults_are_kafkas_and_bad_keys_are_named() {
        let c = TransactionCoordinatorConfig::from_properties(&BTreeMap::new()).unwrap();
        assert_eq!(c.state_log_partitions, 50);
        assert_eq!(c.state_log_replication_factor, 3);
        assert_eq!(c.state_log_min_isr, 2);
        assert_eq!(c.state_log_segment_bytes, 104_857_600);
        assert_eq!(c.max_timeout_ms, 900_000);
        assert_eq!(c.transactional_id_expiration_ms, 604_800_000);
        assert_eq!(c.abort_timed_out_interval_ms, 10_000);
        assert_eq!(c.remove_expired_interval_ms, 3_600_000);

        let props = BTreeMap::from([
            (
                "transaction.max.timeout.ms".to_string(),
                "60000".to_string(),
            ),
            (
                "transaction.state.log.num.partitions".to_string(),
                "7".to_string(),
            ),
        ]);
        let c = TransactionCoordinatorConfig::from_properties(&props).unwrap();
        assert_eq!((c.max_timeout_ms, c.state_log_partitions), (60_000, 7));

        let props = BTreeMap::from([(
            "transactional.id.expiration.ms".to_string(),
            "soon".to_string(),
        )]);
        let e = TransactionCoordinatorConfig::from_properties(&props).unwrap_err();
        assert_eq!(e.key, "transactional.id.expiration.ms");
        assert_eq!(e.value, "soon");
        let props = BTreeMap::from([(
            "transaction.state.log.replication.factor".to_string(),
            "0".to_string(),
        )]);
        let e = TransactionCoordinatorConfig::from_properties(&props).unwrap_err();
        assert_eq!(e.key, "transaction.state.log.replication.factor");
    }
}
