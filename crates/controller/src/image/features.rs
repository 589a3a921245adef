//! Finalized feature levels in the metadata image, as Kafka's `FeaturesImage`:
//! `metadata.version` apart (it decides which records and fields may be written) and the
//! other features (e.g. `eligible.leader.replicas.version`, `kraft.version`) by name. A
//! level of 0 removes a feature, as in Kafka.

use std::collections::BTreeMap;

use kraftd_protocol::metadata_version::MetadataVersion;

/// Kafka's name of the metadata version feature.
pub const METADATA_VERSION_FEATURE: &str = "metadata.version";

/// Finalized features. Small, so a plain map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeaturesImage {
    /// The `metadata.version` feature level, `None` before the bootstrap records.
    pub metadata_version: Option<i16>,
    /// Every other finalized feature with a non-zero level.
    pub finalized: BTreeMap<String, i16>,
}

impl FeaturesImage {
    /// The finalized level of a feature (0 when absent, as Kafka reports it).
    pub fn level(&self, name: &str) -> i16 {
        if name == METADATA_VERSION_FEATURE {
            return self.metadata_version.unwrap_or(0);
        }
        self.finalized.get(name).copied().unwrap_or(0)
    }

    /// The finalized `metadata.version`, which decides the version each record is written
    /// at; before the bootstrap records (nothing versioned is written then), the latest.
    pub fn version(&self) -> MetadataVersion {
        self.metadata_version
            .and_then(|level| MetadataVersion::from_feature_level(level).ok())
            .unwrap_or(MetadataVersion::LATEST_PRODUCTION)
    }
}
