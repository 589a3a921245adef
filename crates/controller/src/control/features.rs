//! `FeatureControlManager`: finalized feature levels (KIP-584), as Kafka's
//! `org.apache.kafka.controller.FeatureControlManager`. UpdateFeatures upgrades or downgrades
//! each named feature to a level every registered broker and controller supports and the
//! active controller itself supports; it is all or nothing: the first failing feature fails the
//! whole request and nothing is written, as in Kafka 3.9+.
//!
//! Every feature this controller supports can change, each level checked against Kafka's
//! dependencies (`kraftd_protocol::features`) with the request's other updates applied.
//! `metadata.version` can be upgraded, and downgraded only across levels that changed no
//! metadata (Kafka refuses the others, safe or unsafe); `kraft.version` changes through the
//! Raft layer (`node/kraft_version.rs`), never here.
//!
//! Pure: reads the image, returns `FeatureLevelRecord`s.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::features::{validate_version, KafkaFeature};
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

/// What the active controller knows of feature support before asking the cluster (Kafka's
/// `QuorumFeatures`): its own ranges, its id, and the quorum's voters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureControlConfig {
    /// The ranges this controller supports; a feature it does not list is disabled (0–0).
    pub supported: BTreeMap<String, SupportedRange>,
    /// `node.id`, which the refusals name ("Local controller N ...").
    pub node_id: i32,
    /// `controller.quorum.voters`' ids (none with a dynamic quorum, as in Kafka): from
    /// 3.7-IV0 each must have registered its supported features before a level changes.
    pub quorum_node_ids: Vec<i32>,
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
            node_id: 0,
            quorum_node_ids: Vec::new(),
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
        }
        // Kafka's `proposedUpdatedVersions`: dependencies are checked against the levels
        // the whole request would leave.
        let mut proposed: BTreeMap<String, i16> = image.features.finalized.clone();
        proposed.insert(
            METADATA_VERSION_FEATURE.to_string(),
            image.features.level(METADATA_VERSION_FEATURE),
        );
        for update in &request.feature_updates {
            proposed.insert(update.feature.clone(), update.max_version_level);
        }
        let mut records = Vec::new();
        for update in &request.feature_updates {
            let upgrade_type =
                if update.allow_downgrade && update.upgrade_type == UPGRADE_TYPE_UPGRADE {
                    UPGRADE_TYPE_SAFE_DOWNGRADE
                } else {
                    update.upgrade_type
                };
            records.push(self.update_feature(
                image,
                &update.feature,
                update.max_version_level,
                upgrade_type,
                &proposed,
            )?);
        }
        Ok(records)
    }

    /// Kafka's `FeatureControlManager.updateFeature` for one feature: its record, or the
    /// request's error. As in Kafka, a level equal to the current one is written again.
    fn update_feature(
        &self,
        image: &MetadataImage,
        name: &str,
        level: i16,
        upgrade_type: i8,
        proposed: &BTreeMap<String, i16>,
    ) -> Result<MetadataRecord, FeatureError> {
        let invalid = |reason: &str| {
            Err((
                ErrorCode::InvalidUpdateVersion,
                format!("Invalid update version {level} for feature {name}. {reason}"),
            ))
        };
        if !(UPGRADE_TYPE_UPGRADE..=UPGRADE_TYPE_UNSAFE_DOWNGRADE).contains(&upgrade_type) {
            return invalid("The controller does not support the given upgrade type.");
        }
        // kraft.version goes to the Raft layer before the request reaches the controller
        // (node/kraft_version.rs); one that gets here was not split off.
        if name == KRAFT_VERSION_FEATURE {
            return invalid("Cannot update kraft.version with UpdateFeatures.");
        }
        let current = image.features.level(name);
        if level < 0 {
            return invalid("A feature version cannot be less than 0.");
        }
        if let Some(reason) = self.reason_not_supported(image, name, level) {
            return invalid(&reason);
        }
        if level < current && upgrade_type == UPGRADE_TYPE_UPGRADE {
            return invalid(
                "Can't downgrade the version of this feature without setting the upgrade type \
                 to either safe or unsafe downgrade.",
            );
        }
        if level > current && upgrade_type != UPGRADE_TYPE_UPGRADE {
            return invalid("Can't downgrade to a newer version.");
        }
        if name == METADATA_VERSION_FEATURE {
            self.check_metadata_version(current, level, upgrade_type)?;
        } else {
            // Kafka's `Feature.featureFromName`, then `validateVersion`.
            let Some(feature) = KafkaFeature::named(name) else {
                return invalid(&format!("Feature {name} not found."));
            };
            if let Err(reason) = validate_version(feature, level, proposed) {
                return invalid(&reason);
            }
        }
        Ok(MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: name.to_string(),
            feature_level: level,
            ..Default::default()
        }))
    }

    /// Kafka's `updateMetadataVersion`: a known level; a downgrade only across levels that
    /// changed no metadata (`MetadataVersion.checkIfMetadataChanged`), never an unsafe one.
    fn check_metadata_version(
        &self,
        current: i16,
        level: i16,
        upgrade_type: i8,
    ) -> Result<(), FeatureError> {
        let invalid_metadata_version = |reason: String| {
            Err((
                ErrorCode::InvalidUpdateVersion,
                format!("Invalid metadata.version {level}. {reason}"),
            ))
        };
        let Ok(new) = MetadataVersion::from_feature_level(level) else {
            return invalid_metadata_version(format!(
                "Valid versions are from {} to {}.",
                MetadataVersion::MINIMUM.level(),
                MetadataVersion::LATEST_PRODUCTION.level()
            ));
        };
        let Ok(old) = MetadataVersion::from_feature_level(current) else {
            return Ok(());
        };
        if new < old && MetadataVersion::check_if_metadata_changed(old, new) {
            // Kafka's `unsupportedMetadataDowngrade`.
            let reason = if upgrade_type == UPGRADE_TYPE_UNSAFE_DOWNGRADE {
                "Unsafe metadata downgrade is not supported in this version."
            } else {
                "Refusing to perform the requested downgrade because it might delete metadata \
                 information."
            };
            return Err((
                ErrorCode::InvalidUpdateVersion,
                format!(
                    "Unsupported metadata.version downgrade from {current} to {level}. {reason}"
                ),
            ));
        }
        Ok(())
    }

    /// Kafka's `reasonNotSupported`: this controller, every registered broker, and (from
    /// 3.7-IV0, when controllers register) every other registered controller must support
    /// the level, and every voter must have registered.
    fn reason_not_supported(
        &self,
        image: &MetadataImage,
        name: &str,
        level: i16,
    ) -> Option<String> {
        const DISABLED: SupportedRange = SupportedRange { min: 0, max: 0 };
        let local = self.config.supported.get(name).copied().unwrap_or(DISABLED);
        if let Some(reason) = range_refusal(
            level,
            &format!("Local controller {}", self.config.node_id),
            local,
        ) {
            return Some(reason);
        }
        for broker in image.cluster.brokers() {
            let range = broker
                .supported_features
                .get(name)
                .copied()
                .unwrap_or(DISABLED);
            if let Some(reason) = range_refusal(level, &format!("Broker {}", broker.id), range) {
                return Some(reason);
            }
        }
        if !image
            .features
            .version()
            .is_controller_registration_supported()
        {
            return None;
        }
        let mut found = BTreeSet::from([self.config.node_id]);
        for controller in image.cluster.controllers() {
            if controller.id == self.config.node_id {
                continue;
            }
            let range = controller
                .supported_features
                .get(name)
                .copied()
                .unwrap_or(DISABLED);
            if let Some(reason) =
                range_refusal(level, &format!("Controller {}", controller.id), range)
            {
                return Some(reason);
            }
            found.insert(controller.id);
        }
        self.config
            .quorum_node_ids
            .iter()
            .find(|id| !found.contains(id))
            .map(|id| {
                format!("controller {id} has not registered, and may not support this feature")
            })
    }
}

/// Kafka's `QuorumFeatures.reasonNotSupported`: `what` does not support `level`, worded by
/// whether it supports the feature at all; ranges print as Kafka's `VersionRange` does.
fn range_refusal(level: i16, what: &str, range: SupportedRange) -> Option<String> {
    if (range.min..=range.max).contains(&level) {
        return None;
    }
    Some(if range.max == 0 {
        format!("{what} does not support this feature.")
    } else if range.min == range.max {
        format!("{what} only supports versions {}", range.min)
    } else {
        format!("{what} only supports versions {}-{}", range.min, range.max)
    })
}
