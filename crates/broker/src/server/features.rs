//! What this build of kraftd supports of the cluster's features (Kafka's `BrokerFeatures`):
//! the ranges a broker registers with and advertises in ApiVersions, and the check that
//! stops a broker on a cluster that finalized a level it does not support.

use kraftd_controller::image::{FeaturesImage, METADATA_VERSION_FEATURE};
use kraftd_protocol::features;
use kraftd_protocol::messages::broker_registration_request::Feature;
use kraftd_protocol::metadata_version::MetadataVersion;

/// The `kraft.version` levels kraftd supports (KIP-853: 1 is a dynamic quorum), as each
/// voter announces them and every node registers with.
pub const KRAFT_VERSION_SUPPORTED: (i16, i16) = (0, 1);

/// The feature ranges this build of kraftd supports (as Kafka's `BrokerFeatures`, which
/// lists every production feature, `kraft.version` included: a controller checks a
/// registering broker against the quorum's `kraft.version` too).
pub fn supported_features() -> Vec<Feature> {
    vec![
        Feature {
            name: features::KRAFT_VERSION_FEATURE.into(),
            min_supported_version: KRAFT_VERSION_SUPPORTED.0,
            max_supported_version: KRAFT_VERSION_SUPPORTED.1,
            ..Default::default()
        },
        // Every level Apache Kafka 4.4.0 knows, 3.3-IV3 to 4.4-IV2.
        Feature {
            name: features::METADATA_VERSION_FEATURE.into(),
            min_supported_version: MetadataVersion::MINIMUM.level(),
            max_supported_version: MetadataVersion::LATEST_PRODUCTION.level(),
            ..Default::default()
        },
        Feature {
            name: features::ELIGIBLE_LEADER_REPLICAS_VERSION_FEATURE.into(),
            min_supported_version: 0,
            max_supported_version: 1,
            ..Default::default()
        },
        // 2: transactions V2 (KIP-890 part 2: an epoch bump per transaction, partitions
        // added by the broker on the producer's behalf).
        Feature {
            name: features::TRANSACTION_VERSION_FEATURE.into(),
            min_supported_version: 0,
            max_supported_version: 2,
            ..Default::default()
        },
        // 1: KIP-848 consumer groups (ConsumerGroupHeartbeat).
        Feature {
            name: features::GROUP_VERSION_FEATURE.into(),
            min_supported_version: 0,
            max_supported_version: 1,
            ..Default::default()
        },
        // 1: KIP-932 share groups (ShareGroupHeartbeat, ShareFetch); 2: their dead-letter
        // queues (KIP-1191).
        Feature {
            name: features::SHARE_VERSION_FEATURE.into(),
            min_supported_version: 0,
            max_supported_version: 2,
            ..Default::default()
        },
        // 1: KIP-1071 streams groups (StreamsGroupHeartbeat, StreamsGroupDescribe).
        Feature {
            name: features::STREAMS_VERSION_FEATURE.into(),
            min_supported_version: 0,
            max_supported_version: 1,
            ..Default::default()
        },
    ]
}

/// The first finalized feature whose level this build does not support (a feature it does
/// not list counts as supporting level 0 only, as Kafka's registration check counts it), as
/// the one-line reason the broker stops: a controller refuses its registration for as long
/// as that feature stays finalized.
pub fn unsupported_finalized_feature(features: &FeaturesImage) -> Option<String> {
    let supported = supported_features();
    let finalized = features
        .metadata_version
        .map(|level| (METADATA_VERSION_FEATURE, level))
        .into_iter()
        .chain(features.finalized.iter().map(|(n, l)| (n.as_str(), *l)));
    for (name, level) in finalized {
        let (min, max) = supported
            .iter()
            .find(|f| f.name == name)
            .map_or((0, 0), |f| {
                (f.min_supported_version, f.max_supported_version)
            });
        if !(min..=max).contains(&level) {
            return Some(format!(
                "the cluster finalized {name}={level}, which this kraftd broker does not support \
                 (it supports {name} {min}-{max}): format the cluster with --feature \
                 {name}={max} (or a --release-version that implies it), or use kraftd brokers \
                 that support it"
            ));
        }
    }
    None
}
