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

/// Broker 1 supports metadata.version 7–25 and ELR 0–1; broker 2 metadata.version 7–24 and
/// ELR 0–1. The cluster is at metadata.version 22 (4.0-IV0).
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
            feature("metadata.version", 22),
            with_features(1, 25),
            with_features(2, 24),
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
    let (next, code, n, _) = send_with_message(image, updates);
    (next, code, n)
}

fn send_with_message(
    image: &MetadataImage,
    updates: Vec<FeatureUpdateKey>,
) -> (MetadataImage, i16, usize, String) {
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
    (
        next,
        result.response.error_code,
        result.records.len(),
        result.response.error_message.unwrap_or_default(),
    )
}

#[test]
fn upgrades_within_every_nodes_range() {
    let image = image();
    let (next, code, n) = send(
        &image,
        vec![
            update("metadata.version", 24, UPGRADE_TYPE_UPGRADE),
            update("eligible.leader.replicas.version", 1, UPGRADE_TYPE_UPGRADE),
        ],
    );
    assert_eq!((code, n), (0, 2));
    assert_eq!(next.features.level("metadata.version"), 24);
    assert_eq!(next.features.level("eligible.leader.replicas.version"), 1);

    // Broker 2 stops at 24.
    let (_, code, n, message) = send_with_message(
        &next,
        vec![update("metadata.version", 25, UPGRADE_TYPE_UPGRADE)],
    );
    assert_eq!((code, n), (ErrorCode::InvalidUpdateVersion.code(), 0));
    assert_eq!(
        message,
        "Invalid update version 25 for feature metadata.version. Broker 2 only supports \
         versions 7-24"
    );
    // 24 (4.0-IV2) changed no metadata: a downgrade to 23 is allowed, as in Kafka; 23
    // (4.0-IV1) did, so one to 22 is not.
    let (down, code, n) = send(
        &next,
        vec![update("metadata.version", 23, UPGRADE_TYPE_SAFE_DOWNGRADE)],
    );
    assert_eq!((code, n), (0, 1));
    assert_eq!(down.features.level("metadata.version"), 23);
    let (_, code, _, message) = send_with_message(
        &down,
        vec![update("metadata.version", 22, UPGRADE_TYPE_SAFE_DOWNGRADE)],
    );
    assert_eq!(code, ErrorCode::InvalidUpdateVersion.code());
    assert_eq!(
        message,
        "Unsupported metadata.version downgrade from 23 to 22. Refusing to perform the \
         requested downgrade because it might delete metadata information."
    );

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
        // Levels 14–15 changed the metadata.
        vec![update("metadata.version", 13, UPGRADE_TYPE_SAFE_DOWNGRADE)],
        vec![update(
            "metadata.version",
            13,
            UPGRADE_TYPE_UNSAFE_DOWNGRADE,
        )],
        // An upgrade type that says downgrade, for a higher level.
        vec![update("metadata.version", 23, UPGRADE_TYPE_SAFE_DOWNGRADE)],
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
            update("metadata.version", 23, UPGRADE_TYPE_UPGRADE),
            update("metadata.version.typo", 1, UPGRADE_TYPE_UPGRADE),
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
    // ELR 1 needs metadata.version 23, the level the request itself would leave.
    let (_, _, _, message) = send_with_message(
        &image,
        vec![update(
            "eligible.leader.replicas.version",
            1,
            UPGRADE_TYPE_UPGRADE,
        )],
    );
    assert_eq!(
        message,
        "Invalid update version 1 for feature eligible.leader.replicas.version. \
         eligible.leader.replicas.version could not be set to 1 because it depends on \
         metadata.version level 23"
    );
    let (_, code, n) = send(
        &image,
        vec![
            update("eligible.leader.replicas.version", 1, UPGRADE_TYPE_UPGRADE),
            update("metadata.version", 23, UPGRADE_TYPE_UPGRADE),
        ],
    );
    assert_eq!((code, n), (0, 2));
    let (_, code, n, message) = send_with_message(
        &image,
        vec![update("no.such.feature", 0, UPGRADE_TYPE_UPGRADE)],
    );
    assert_eq!((code, n), (bad, 0));
    assert_eq!(
        message,
        "Invalid update version 0 for feature no.such.feature. Feature no.such.feature not \
         found."
    );
    let (_, _, _, message) = send_with_message(
        &image,
        vec![update("group.version", 1, UPGRADE_TYPE_UPGRADE)],
    );
    assert_eq!(
        message,
        "Invalid update version 1 for feature group.version. Local controller 0 does not \
         support this feature."
    );

    let request = UpdateFeaturesRequest {
        feature_updates: vec![update("metadata.version", 23, UPGRADE_TYPE_UPGRADE)],
        validate_only: true,
        ..Default::default()
    };
    let result = FeatureControlManager::default().update_features(&image, &request);
    assert_eq!(result.response.error_code, 0);
    assert!(result.records.is_empty());
}
