//! FeatureControlManager: UpdateFeatures upgrades, downgrades, node support checks, the
//! metadata.version rules and all-or-nothing failure, with records replayed.

use kraftd_controller::control::features::{
    UPGRADE_TYPE_SAFE_DOWNGRADE, UPGRADE_TYPE_UNSAFE_DOWNGRADE, UPGRADE_TYPE_UPGRADE,
};
use kraftd_controller::control::FeatureControlManager;
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::update_features_request::FeatureUpdateKey;
use kraftd_protocol::messages::UpdateFeaturesRequest;
use kraftd_protocol::metadata::register_broker_record::BrokerFeature;
use kraftd_protocol::{ErrorCode, MetadataRecord};

use kraftd_controller::testing::records::{feature, register_broker};

/// Broker 1 supports metadata.version 7–25 and ELR 0–1; broker 2 metadata.version 7–21 and
/// ELR 0–1. The cluster is at metadata.version 20.
fn image() -> MetadataImage {
    let with_features = |id: i32, mv_max: i16| {
        let MetadataRecord::RegisterBroker(mut r) = register_broker(id, 10 + i64::from(id), false)
        else {
            unreachable!()
        };
        r.features = vec![
            BrokerFeature {
                name: "metadata.version".into(),
                min_supported_version: 7,
                max_supported_version: mv_max,
                ..Default::default()
            },
            BrokerFeature {
                name: "eligible.leader.replicas.version".into(),
                min_supported_version: 0,
                max_supported_version: 1,
                ..Default::default()
            },
        ];
        MetadataRecord::RegisterBroker(r)
    };
    MetadataImage::empty()
        .replay_all(&[
            feature("metadata.version", 20),
            with_features(1, 25),
            with_features(2, 21),
        ])
        .unwrap()
}

fn update(name: &str, level: i16, upgrade_type: i8) -> FeatureUpdateKey {
    FeatureUpdateKey {
        feature: name.into(),
        max_version_level: level,
        allow_downgrade: false,
        upgrade_type,
        ..Default::default()
    }
}

fn send(image: &MetadataImage, updates: Vec<FeatureUpdateKey>) -> (MetadataImage, i16, usize) {
    let request = UpdateFeaturesRequest {
        feature_updates: updates,
        ..Default::default()
    };
    let result = FeatureControlManager::default().update_features(image, &request);
    assert!(result
        .response
        .results
        .iter()
        .all(|r| r.error_code == result.response.error_code));
    let next = image.replay_all(&result.records).unwrap();
    (next, result.response.error_code, result.records.len())
}

#[test]
fn upgrades_within_every_nodes_range() {
    let image = image();
    let (next, code, n) = send(
        &image,
        vec![
            update("metadata.version", 21, UPGRADE_TYPE_UPGRADE),
            update("eligible.leader.replicas.version", 1, UPGRADE_TYPE_UPGRADE),
        ],
    );
    assert_eq!((code, n), (0, 2));
    assert_eq!(next.features.level("metadata.version"), 21);
    assert_eq!(next.features.level("eligible.leader.replicas.version"), 1);

    // Broker 2 stops at 21.
    let (_, code, n) = send(
        &next,
        vec![update("metadata.version", 22, UPGRADE_TYPE_UPGRADE)],
    );
    assert_eq!((code, n), (ErrorCode::InvalidUpdateVersion.code(), 0));

    // Downgrading ELR needs a downgrade type; then it removes the feature.
    let (_, code, _) = send(
        &next,
        vec![update(
            "eligible.leader.replicas.version",
            0,
            UPGRADE_TYPE_UPGRADE,
        )],
    );
    assert_eq!(code, ErrorCode::InvalidUpdateVersion.code());
    let (after, code, n) = send(
        &next,
        vec![update(
            "eligible.leader.replicas.version",
            0,
            UPGRADE_TYPE_SAFE_DOWNGRADE,
        )],
    );
    assert_eq!((code, n), (0, 1));
    assert_eq!(after.features.level("eligible.leader.replicas.version"), 0);
}

#[test]
fn refusals() {
    let image = image();
    let bad = ErrorCode::InvalidUpdateVersion.code();
    for updates in [
        vec![update("metadata.version", 19, UPGRADE_TYPE_SAFE_DOWNGRADE)],
        vec![update(
            "metadata.version",
            19,
            UPGRADE_TYPE_UNSAFE_DOWNGRADE,
        )],
        vec![update("no.such.feature", 1, UPGRADE_TYPE_UPGRADE)],
        vec![update("kraft.version", 1, UPGRADE_TYPE_UPGRADE)],
        vec![update(
            "eligible.leader.replicas.version",
            -1,
            UPGRADE_TYPE_UPGRADE,
        )],
        vec![update("eligible.leader.replicas.version", 1, 9)],
        // All or nothing: the good update is not written either.
        vec![
            update("eligible.leader.replicas.version", 1, UPGRADE_TYPE_UPGRADE),
            update("metadata.version", 30, UPGRADE_TYPE_UPGRADE),
        ],
    ] {
        let (_, code, n) = send(&image, updates.clone());
        assert_eq!((code, n), (bad, 0), "{updates:?}");
    }
    let (_, code, _) = send(
        &image,
        vec![
            update("eligible.leader.replicas.version", 1, UPGRADE_TYPE_UPGRADE),
            update("eligible.leader.replicas.version", 1, UPGRADE_TYPE_UPGRADE),
        ],
    );
    assert_eq!(code, ErrorCode::InvalidRequest.code());

    let request = UpdateFeaturesRequest {
        feature_updates: vec![update("metadata.version", 21, UPGRADE_TYPE_UPGRADE)],
        validate_only: true,
        ..Default::default()
    };
    let result = FeatureControlManager::default().update_features(&image, &request);
    assert_eq!(result.response.error_code, 0);
    assert!(result.records.is_empty());
}
