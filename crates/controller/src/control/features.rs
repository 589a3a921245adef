//! `FeatureControlManager`: finalized feature levels (KIP-584), as Kafka's
//! `org.apache.kafka.controller.FeatureControlManager`. UpdateFeatures upgrades or downgrades
//! each named feature to a level every registered broker and controller supports and the
//! active controller itself supports; it is all or nothing: the first failing feature fails the
//! whole request and nothing is written, as in Kafka 3.9+.
//!
//! `metadata.version` can be upgraded but not downgraded (Kafka refuses both safe and unsafe
//! metadata downgrades); `kraft.version` changes through the Raft layer, never here.
//!
//! Pure: reads the image, returns `FeatureLevelRecord`s.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::messages::update_features_response::UpdatableFeatureResult;
use kraftd_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use kraftd_protocol::metadata::FeatureLevelRecord;
use kraftd_protocol::metadata_version::MetadataVersion;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use crate::control::replication::ELIGIBLE_LEADER_REPLICAS_VERSION_FEATURE;
use crate::control::result::ControllerResult;
use crate::image::{MetadataImage, SupportedRange, METADATA_VERSION_FEATURE};

/// Kafka's `KRaftVersion.FEATURE_NAME`.
pub const KRAFT_VERSION_FEATURE: &str = "kraft.version";

/// Kafka's `FeatureUpdate.UpgradeType` ids.
pub const UPGRADE_TYPE_UPGRADE: i8 = 1;
pub const UPGRADE_TYPE_SAFE_DOWNGRADE: i8 = 2;
pub const UPGRADE_TYPE_UNSAFE_DOWNGRADE: i8 = 3;

/// The feature ranges the active controller itself supports (Kafka's `QuorumFeatures`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureControlConfig {
    pub supported: BTreeMap<String, SupportedRange>,
}

/// Updates finalized features. Holds only configuration: all state is the image.
#[derive(Debug, Clone, Default)]
pub struct FeatureControlManager {
    config: FeatureControlConfig,
}

/// An error for the request: the code and Kafka's message.
type FeatureError = (ErrorCode, String);

impl Default for FeatureControlConfig {
    /// metadata.version 7 (3.3-IV3, Kafka's oldest KRaft version) to 33 (4.4-IV2, Kafka
    /// 4.4.0's newest), and the KIP-966 feature at 0–1.
    fn default() -> Self {
        let range = |min, max| SupportedRange { min, max };
        FeatureControlConfig {
            supported: BTreeMap::from([
                (
                    METADATA_VERSION_FEATURE.to_string(),
                    range(
                        MetadataVersion::MINIMUM.level(),
                        MetadataVersion::LATEST_PRODUCTION.level(),
                    ),
                ),
                (
                    ELIGIBLE_LEADER_REPLICAS_VERSION_FEATURE.to_string(),
                    range(0, 1),
                ),
            ]),
        }
    }
}

impl FeatureControlManager {
    pub fn new(config: FeatureControlConfig) -> Self {
        FeatureControlManager { config }
    }

    pub fn config(&self) -> &FeatureControlConfig {
        &self.config
    }

    /// UpdateFeatures. `AllowDowngrade` (v0) counts as a safe downgrade.
    pub fn update_features(
        &self,
        image: &MetadataImage,
        request: &UpdateFeaturesRequest,
    ) -> ControllerResult<UpdateFeaturesResponse> {
        let outcome = self.updates(image, request);
        let (error_code, error_message, records) = match outcome {
            Ok(records) => (0, None, records),
            Err((code, message)) => (code.code(), Some(message), Vec::new()),
        };
        let response = UpdateFeaturesResponse {
            error_code,
            error_message: error_message.clone(),
            results: request
                .feature_updates
                .iter()
                .map(|u| UpdatableFeatureResult {
                    feature: u.feature.clone(),
                    error_code,
                    error_message: error_message.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let records = if request.validate_only {
            Vec::new()
        } else {
            records
        };
        ControllerResult::atomic_of(records, response)
    }

    fn updates(
        &self,
        image: &MetadataImage,
        request: &UpdateFeaturesRequest,
    ) -> Result<Vec<MetadataRecord>, FeatureError> {
        let mut seen = BTreeSet::new();
        let mut records = Vec::new();
        for update in &request.feature_updates {
            let name = update.feature.as_str();
            if name.is_empty() {
                return Err((
                    ErrorCode::InvalidRequest,
                    "Feature name cannot be empty.".into(),
                ));
            }
            if !seen.insert(name) {
                return Err((
                    ErrorCode::InvalidRequest,
                    format!("Duplicate feature {name} in the request."),
                ));
            }
            let upgrade_type =
                if update.allow_downgrade && update.upgrade_type == UPGRADE_TYPE_UPGRADE {
                    UPGRADE_TYPE_SAFE_DOWNGRADE
                } else {
                    update.upgrade_type
                };
            let level = update.max_version_level;
            if let Some(record) = self.update_feature(image, name, level, upgrade_type)? {
                records.push(record);
            }
        }
        Ok(records)
    }

    /// Kafka's `FeatureControlManager.updateFeature` for one feature.
    fn update_feature(
        &self,
        image: &MetadataImage,
        name: &str,
        level: i16,
        upgrade_type: i8,
    ) -> Result<Option<MetadataRecord>, FeatureError> {
        let invalid = |message: String| Err((ErrorCode::InvalidUpdateVersion, message));
        if !(UPGRADE_TYPE_UPGRADE..=UPGRADE_TYPE_UNSAFE_DOWNGRADE).contains(&upgrade_type) {
            return invalid("The controller does not support the given upgrade type.".into());
        }
        if name == KRAFT_VERSION_FEATURE {
            return invalid(format!(
                "Cannot update {KRAFT_VERSION_FEATURE} with UpdateFeatures."
            ));
        }
        if level < 0 {
            return invalid("A feature version cannot be less than 0.".into());
        }
        let current = image.features.level(name);
        if level < current && upgrade_type == UPGRADE_TYPE_UPGRADE {
            return invalid(
                "Can't downgrade the version of this feature without setting the upgrade type \
                 to either safe or unsafe downgrade."
                    .into(),
            );
        }
        if name == METADATA_VERSION_FEATURE && level < current {
            return invalid(if upgrade_type == UPGRADE_TYPE_SAFE_DOWNGRADE {
                format!(
                    "Invalid metadata.version {level}. Refusing to perform the requested \
                     downgrade because it might delete metadata information."
                )
            } else {
                "Unsafe metadata downgrade is not supported in this version.".into()
            });
        }
        if level > 0 || name == METADATA_VERSION_FEATURE {
            match self.config.supported.get(name) {
                Some(r) if r.min <= level && level <= r.max => {}
                Some(r) => {
                    return invalid(format!(
                        "Invalid update version {level} for feature {name}. Local controller \
                         only supports versions {}-{}",
                        r.min, r.max
                    ))
                }
                None => {
                    return invalid(format!(
                        "Invalid update version {level} for feature {name}. The controller does \
                         not support the given feature."
                    ))
                }
            }
            let nodes = image
                .cluster
                .brokers()
                .map(|b| ("Broker", b.id, &b.supported_features))
                .chain(
                    image
                        .cluster
                        .controllers()
                        .map(|c| ("Controller", c.id, &c.supported_features)),
                );
            for (kind, id, features) in nodes {
                match features.get(name) {
                    Some(r) if r.min <= level && level <= r.max => {}
                    Some(r) => {
                        return invalid(format!(
                            "Invalid update version {level} for feature {name}. {kind} {id} only \
                             supports versions {}-{}",
                            r.min, r.max
                        ))
                    }
                    None => {
                        return invalid(format!(
                            "Invalid update version {level} for feature {name}. {kind} {id} does \
                             not support this feature."
                        ))
                    }
                }
            }
        }
        if level == current {
            return Ok(None);
        }
        Ok(Some(MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: name.to_string(),
            feature_level: level,
            ..Default::default()
        })))
    }
}
