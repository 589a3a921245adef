//! The feature levels `kraftd format` finalizes, as Kafka 4.4.0's `Formatter` computes them
//! from `--release-version` and `--feature name=level`: `metadata.version` from the release
//! (default 4.4-IV2, Kafka's `LATEST_PRODUCTION`), every other feature at the level the
//! operator names or else Kafka's default for that `metadata.version` (the highest level
//! whose bootstrap version it reaches: Kafka's `Feature.defaultLevel`), then each level
//! checked against Kafka's levels and dependencies. One difference: a default never exceeds
//! what kraftd supports (`kraftd_broker::server::supported_features`), so a feature kraftd
//! does not serve would default to 0 and `share.version` defaults to the highest level
//! kraftd serves; a level named explicitly that kraftd does not support is refused. Every
//! Kafka 4.4.0 default is served now (`streams.version` 1 since streams groups, KIP-1071).
//! `kraft.version` is decided by the quorum flags ([`super::dynamic`]) and only checked here.

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use kraftd_controller::image::METADATA_VERSION_FEATURE;
pub use kraftd_protocol::features::KRAFT_VERSION_FEATURE;
use kraftd_protocol::features::{validate_version, KAFKA_FEATURES};
use kraftd_protocol::metadata_version::MetadataVersion as Mv;

use super::dynamic::KRAFT_VERSION_DYNAMIC;

/// What the operator asked for: `--release-version` and each `--feature name=level`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeatureArgs {
    pub release_version: Option<String>,
    pub features: Vec<String>,
}

/// The levels a format finalizes: `metadata.version`, and every other feature by name
/// (level 0 included; only levels above 0 become records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalizedLevels {
    pub metadata_version: Mv,
    pub features: BTreeMap<String, i16>,
}

/// The range of `name` this build of kraftd supports; (0, 0) for a feature it does not list.
fn kraftd_supported(name: &str) -> (i16, i16) {
    kraftd_broker::server::supported_features()
        .into_iter()
        .find(|f| f.name == name)
        .map_or((0, 0), |f| {
            (f.min_supported_version, f.max_supported_version)
        })
}

/// Kafka's `Formatter.calculateEffectiveReleaseVersion` and `calculateEffectiveFeatureLevels`,
/// with kraftd's supported ranges as the ceiling of every default. `dynamic_quorum` is
/// whether `--standalone`, `--initial-controllers` or `--no-initial-controllers` was given.
pub fn finalized_levels(args: &FeatureArgs, dynamic_quorum: bool) -> Result<FinalizedLevels> {
    let mut named: BTreeMap<String, i16> = BTreeMap::new();
    for text in &args.features {
        let (name, level) = parse_feature(text)?;
        named.insert(name, level);
    }
    let metadata_version = match (
        named.remove(METADATA_VERSION_FEATURE),
        &args.release_version,
    ) {
        (Some(_), Some(_)) => bail!(
            "Use --release-version instead of --feature {METADATA_VERSION_FEATURE}=X to avoid \
             ambiguity."
        ),
        (Some(level), None) => Mv::from_feature_level(level)?,
        (None, Some(release)) => Mv::from_version_string(release)?,
        (None, None) => Mv::LATEST_PRODUCTION,
    };
    for name in named.keys() {
        if !KAFKA_FEATURES.iter().any(|f| f.name == name) {
            bail!(
                "Unsupported feature: {name}. Supported features are: {}",
                KAFKA_FEATURES
                    .iter()
                    .map(|f| f.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
    }
    let mut features = BTreeMap::new();
    for feature in &KAFKA_FEATURES {
        let level = match named.get(feature.name) {
            Some(level) => *level,
            None if feature.name == KRAFT_VERSION_FEATURE => {
                if dynamic_quorum {
                    KRAFT_VERSION_DYNAMIC
                } else {
                    0
                }
            }
            None => feature
                .default_level(metadata_version)
                .min(kraftd_supported(feature.name).1),
        };
        features.insert(feature.name.to_string(), level);
    }
    if let Some(level) = named.get(KRAFT_VERSION_FEATURE) {
        check_kraft_version(*level, dynamic_quorum)?;
    }
    let proposed: BTreeMap<String, i16> = features
        .iter()
        .map(|(name, level)| (name.clone(), *level))
        .chain([(
            METADATA_VERSION_FEATURE.to_string(),
            metadata_version.level(),
        )])
        .collect();
    for feature in &KAFKA_FEATURES {
        let level = features[feature.name];
        if let Err(message) = validate_version(feature, level, &proposed) {
            bail!("{message}");
        }
        let (min, max) = kraftd_supported(feature.name);
        if !(min..=max).contains(&level) {
            bail!(
                "{}={level} is not supported by kraftd (it supports {} {min}-{max}); pass \
                 --feature {}={max}",
                feature.name,
                feature.name,
                feature.name
            );
        }
    }
    Ok(FinalizedLevels {
        metadata_version,
        features,
    })
}

/// `name=level`, as `kafka-storage format --feature` takes it.
fn parse_feature(text: &str) -> Result<(String, i16)> {
    let Some((name, level)) = text.split_once('=') else {
        bail!("Can't parse feature={text}. The format must be name=level.");
    };
    let name = name.trim();
    let level = level.trim();
    match level.parse::<i16>() {
        Ok(level) if !name.is_empty() => Ok((name.to_string(), level)),
        _ => bail!("Can't parse feature={text}. The level must be a number from 0 to 32767."),
    }
}

/// Kafka's `effectiveKRaftFeatureLevel` checks for an explicit `kraft.version`.
fn check_kraft_version(level: i16, dynamic_quorum: bool) -> Result<()> {
    if level == 0 && dynamic_quorum {
        bail!(
            "Cannot set kraft.version to 0 if controller.quorum.voters is empty and one of the \
             flags --standalone, --initial-controllers, or --no-initial-controllers is used. For \
             dynamic controllers support, try removing the --feature flag for kraft.version."
        );
    }
    if level != 0 && !dynamic_quorum {
        bail!(
            "Cannot set kraft.version to {level} unless controller.quorum.voters is empty and one \
             of the flags --standalone, --initial-controllers, or --no-initial-controllers is \
             used. For dynamic controllers support, try using one of --standalone, \
             --initial-controllers, or --no-initial-controllers and removing \
             controller.quorum.voters."
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(release: Option<&str>, features: &[&str]) -> Result<FinalizedLevels> {
        finalized_levels(
            &FeatureArgs {
                release_version: release.map(str::to_string),
                features: features.iter().map(|s| s.to_string()).collect(),
            },
            false,
        )
    }

    #[test]
    fn defaults_are_kafkas_capped_by_what_kraftd_serves() {
        let l = levels(None, &[]).unwrap();
        assert_eq!(l.metadata_version.level(), 33);
        assert_eq!(l.features["transaction.version"], 2);
        assert_eq!(l.features["group.version"], 1);
        assert_eq!(l.features["eligible.leader.replicas.version"], 1);
        assert_eq!(l.features["kraft.version"], 0);
        // Kafka's default is 2 and 1; kraftd serves share.version up to its own maximum and
        // streams groups (KIP-1071).
        assert_eq!(
            l.features["share.version"],
            2.min(kraftd_supported("share.version").1)
        );
        assert_eq!(l.features["streams.version"], 1);
    }

    #[test]
    fn release_versions_map_as_kafkas_version_mapping() {
        // `kafka-features version-mapping --release-version 4.0` from the 4.4.0 jars.
        let l = levels(Some("4.0"), &[]).unwrap();
        assert_eq!(l.metadata_version.level(), 25);
        assert_eq!(l.features["eligible.leader.replicas.version"], 0);
        assert_eq!(l.features["transaction.version"], 2);
        assert_eq!(l.features["share.version"], 0);
        let l = levels(Some("3.9"), &[]).unwrap();
        assert_eq!(l.metadata_version.level(), 21);
        assert_eq!(l.features["transaction.version"], 0);
        assert_eq!(l.features["group.version"], 0);
        let l = levels(Some("4.1"), &[]).unwrap();
        assert_eq!(l.features["eligible.leader.replicas.version"], 1);
        assert_eq!(
            levels(None, &["metadata.version=30"])
                .unwrap()
                .metadata_version
                .level(),
            30
        );
    }

    #[test]
    fn bad_levels_are_refused_with_kafkas_messages() {
        let err = |r: Option<&str>, f: &[&str]| levels(r, f).unwrap_err().to_string();
        assert!(err(Some("4.4"), &["metadata.version=33"]).contains("Use --release-version"));
        assert!(err(Some("9.9"), &[]).contains("Unknown metadata.version '9.9'"));
        assert!(err(None, &["metadata.version=34"])
            .contains("No MetadataVersion with feature level 34"));
        assert!(err(None, &["foo.version=1"]).starts_with("Unsupported feature: foo.version."));
        assert!(err(None, &["group.version=7"])
            .contains("No feature:group.version with feature level 7"));
        assert!(
            err(Some("4.0-IV0"), &["eligible.leader.replicas.version=1"])
                .contains("depends on metadata.version level 23")
        );
        assert!(err(None, &["streams.version=2"])
            .contains("No feature:streams.version with feature level 2"));
        assert!(err(None, &["kraft.version=1"]).contains("Cannot set kraft.version to 1"));
        assert!(err(None, &["share.version"]).contains("Can't parse feature=share.version"));
        let ok = levels(None, &["share.version=1", "streams.version=0"]).unwrap();
        assert_eq!(ok.features["share.version"], 1);
    }
}
