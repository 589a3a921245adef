//! Kafka 4.4.0's production features besides `metadata.version` (its `Feature` enum and
//! each `FeatureVersion`): every level with the `metadata.version` that makes it the default
//! (its bootstrap version) and what it depends on. `kraftd format` computes default levels
//! from this table, and the controller's UpdateFeatures checks a level's dependencies with
//! it ([`validate_version`], Kafka's `Feature.validateVersion`), so both read one table.

use std::collections::BTreeMap;

use crate::metadata_version::MetadataVersion as Mv;

/// Kafka's `MetadataVersion.FEATURE_NAME`.
pub const METADATA_VERSION_FEATURE: &str = "metadata.version";
/// Kafka's `KRaftVersion.FEATURE_NAME`.
pub const KRAFT_VERSION_FEATURE: &str = "kraft.version";
/// Kafka's `TransactionVersion.FEATURE_NAME`.
pub const TRANSACTION_VERSION_FEATURE: &str = "transaction.version";
/// Kafka's `GroupVersion.FEATURE_NAME`.
pub const GROUP_VERSION_FEATURE: &str = "group.version";
/// Kafka's `EligibleLeaderReplicasVersion.FEATURE_NAME`.
pub const ELIGIBLE_LEADER_REPLICAS_VERSION_FEATURE: &str = "eligible.leader.replicas.version";
/// Kafka's `ShareVersion.FEATURE_NAME`.
pub const SHARE_VERSION_FEATURE: &str = "share.version";
/// Kafka's `StreamsVersion.FEATURE_NAME`.
pub const STREAMS_VERSION_FEATURE: &str = "streams.version";

/// One level of a feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureLevel {
    pub level: i16,
    /// The `metadata.version` from which this level is the default (Kafka's
    /// `bootstrapMetadataVersion`).
    pub bootstrap: Mv,
    /// The lowest `metadata.version` this level needs, if any (Kafka's `dependencies`; every
    /// dependency of a 4.4.0 feature is on `metadata.version`).
    pub requires: Option<Mv>,
}

/// One of Kafka's features.
#[derive(Debug)]
pub struct KafkaFeature {
    pub name: &'static str,
    /// Level 0 first.
    pub levels: &'static [FeatureLevel],
}

const fn level(level: i16, bootstrap: Mv, requires: Option<Mv>) -> FeatureLevel {
    FeatureLevel {
        level,
        bootstrap,
        requires,
    }
}

/// Kafka 4.4.0's `Feature.PRODUCTION_FEATURES`, `kraft.version` first as Kafka lists them.
pub const KAFKA_FEATURES: [KafkaFeature; 6] = [
    KafkaFeature {
        name: KRAFT_VERSION_FEATURE,
        levels: &[level(0, Mv::MINIMUM, None), level(1, Mv::IBP_3_9_IV0, None)],
    },
    KafkaFeature {
        name: TRANSACTION_VERSION_FEATURE,
        levels: &[
            level(0, Mv::MINIMUM, None),
            level(1, Mv::IBP_4_0_IV2, None),
            level(2, Mv::IBP_4_0_IV2, None),
        ],
    },
    KafkaFeature {
        name: GROUP_VERSION_FEATURE,
        levels: &[level(0, Mv::MINIMUM, None), level(1, Mv::IBP_4_0_IV0, None)],
    },
    KafkaFeature {
        name: ELIGIBLE_LEADER_REPLICAS_VERSION_FEATURE,
        levels: &[
            level(0, Mv::MINIMUM, None),
            level(1, Mv::IBP_4_1_IV0, Some(Mv::IBP_4_0_IV1)),
        ],
    },
    KafkaFeature {
        name: SHARE_VERSION_FEATURE,
        levels: &[
            level(0, Mv::MINIMUM, None),
            level(1, Mv::IBP_4_2_IV0, None),
            level(2, Mv::IBP_4_4_IV0, None),
        ],
    },
    KafkaFeature {
        name: STREAMS_VERSION_FEATURE,
        levels: &[level(0, Mv::MINIMUM, None), level(1, Mv::IBP_4_2_IV1, None)],
    },
];

impl KafkaFeature {
    /// Kafka's `Feature.featureFromName`.
    pub fn named(name: &str) -> Option<&'static KafkaFeature> {
        KAFKA_FEATURES.iter().find(|f| f.name == name)
    }

    /// Kafka's `Feature.defaultLevel`: the highest level whose bootstrap version `mv` reaches.
    pub fn default_level(&self, mv: Mv) -> i16 {
        self.levels
            .iter()
            .filter(|l| l.bootstrap <= mv)
            .map(|l| l.level)
            .max()
            .unwrap_or(0)
    }

    /// Kafka's `fromFeatureLevel`; the error is its message.
    pub fn level(&self, level: i16) -> Result<&FeatureLevel, String> {
        self.levels
            .iter()
            .find(|l| l.level == level)
            .ok_or_else(|| format!("No feature:{} with feature level {level}", self.name))
    }
}

/// Kafka's `Feature.validateVersion`: level `level` of `feature` against the levels the
/// cluster would have (`proposed`: the finalized ones with the request's updates, and
/// `metadata.version`); the error is Kafka's message.
pub fn validate_version(
    feature: &KafkaFeature,
    level: i16,
    proposed: &BTreeMap<String, i16>,
) -> Result<(), String> {
    let found = feature.level(level)?;
    let metadata_version = proposed.get(METADATA_VERSION_FEATURE).copied();
    if level >= 1 && metadata_version.is_none_or(|mv| mv < Mv::MINIMUM.level()) {
        return Err(format!(
            "{} could not be set to {level} because it depends on {METADATA_VERSION_FEATURE}={} ({})",
            feature.name,
            Mv::MINIMUM.level(),
            Mv::MINIMUM
        ));
    }
    if let Some(required) = found.requires {
        if metadata_version.is_none_or(|mv| mv < required.level()) {
            return Err(format!(
                "{} could not be set to {level} because it depends on {METADATA_VERSION_FEATURE} \
                 level {}",
                feature.name,
                required.level()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dependencies_are_checked_against_the_proposed_levels() {
        let elr = KafkaFeature::named("eligible.leader.replicas.version").unwrap();
        let at = |mv: i16| BTreeMap::from([(METADATA_VERSION_FEATURE.to_string(), mv)]);
        assert_eq!(
            validate_version(elr, 1, &at(22)).unwrap_err(),
            "eligible.leader.replicas.version could not be set to 1 because it depends on \
             metadata.version level 23"
        );
        assert!(validate_version(elr, 1, &at(23)).is_ok());
        assert!(validate_version(elr, 0, &BTreeMap::new()).is_ok());
        assert_eq!(
            validate_version(elr, 2, &at(33)).unwrap_err(),
            "No feature:eligible.leader.replicas.version with feature level 2"
        );
        let group = KafkaFeature::named("group.version").unwrap();
        assert!(validate_version(group, 1, &BTreeMap::new())
            .unwrap_err()
            .contains("depends on metadata.version=7 (3.3-IV3)"));
        assert_eq!(group.default_level(Mv::IBP_3_9_IV0), 0);
        assert_eq!(group.default_level(Mv::IBP_4_0_IV0), 1);
    }
}
