//! Unit tests of controller registration: the record written, a re-registration replacing
//! the older one in the image, Kafka's errors for UnregisterController.

use super::*;
use crate::image::delta::MetadataDelta;
use kraftd_protocol::messages::controller_registration_request::{Feature, Listener};
use kraftd_protocol::metadata::FeatureLevelRecord;
use kraftd_protocol::Uuid;

fn image_at(metadata_version: i16, records: &[MetadataRecord]) -> MetadataImage {
    let mut delta = MetadataDelta::new(&MetadataImage::empty());
    delta
        .replay(&MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: METADATA_VERSION_FEATURE.to_string(),
            feature_level: metadata_version,
            ..Default::default()
        }))
        .unwrap();
    for r in records {
        delta.replay(r).unwrap();
    }
    delta.apply()
}

fn request(id: i32, incarnation: u8, port: u16) -> ControllerRegistrationRequest {
    ControllerRegistrationRequest {
        controller_id: id,
        incarnation_id: Uuid([incarnation; 16]),
        zk_migration_ready: false,
        listeners: vec![Listener {
            name: "CONTROLLER".into(),
            host: "127.0.0.1".into(),
            port,
            security_protocol: 0,
            ..Default::default()
        }],
        features: vec![Feature {
            name: "kraft.version".into(),
            min_supported_version: 0,
            max_supported_version: 1,
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn a_registration_is_one_atomic_record_and_replaces_the_older() {
    let image = image_at(25, &[]);
    let first = register_controller(&image, &request(2, 1, 9093));
    assert!(first.is_atomic);
    assert_eq!(first.response, (ErrorCode::None, None));
    let image = image_at(25, &first.records);
    let registered = image.cluster.controller(2).unwrap();
    assert_eq!(registered.incarnation_id, Uuid([1; 16]));
    assert_eq!(registered.listeners["CONTROLLER"].port, 9093);
    assert_eq!(registered.supported_features["kraft.version"].max, 1);

    let again = register_controller(&image, &request(2, 2, 9094));
    let mut records = first.records.clone();
    records.extend(again.records);
    let image = image_at(25, &records);
    let registered = image.cluster.controller(2).unwrap();
    assert_eq!(registered.incarnation_id, Uuid([2; 16]));
    assert_eq!(registered.listeners["CONTROLLER"].port, 9094);
}

#[test]
fn registrations_need_metadata_version_3_7() {
    let old = register_controller(&image_at(14, &[]), &request(2, 1, 9093));
    assert!(old.records.is_empty());
    assert_eq!(old.response.0, ErrorCode::UnsupportedVersion);
    assert_eq!(
        old.response.1.as_deref(),
        Some("The current MetadataVersion is too old to support controller registrations.")
    );
}

#[test]
fn unregister_controller_has_kafkas_errors() {
    let registered = register_controller(&image_at(33, &[]), &request(2, 1, 9093)).records;
    let image = image_at(33, &registered);
    let unknown = unregister_controller(&image, 7, 1);
    assert_eq!(
        unknown.response,
        (
            ErrorCode::ControllerIdNotRegistered,
            Some("Controller ID 7 is not currently registered.".to_string())
        )
    );
    let itself = unregister_controller(&image, 2, 2);
    assert_eq!(itself.response.0, ErrorCode::InvalidRequest);
    assert!(itself.records.is_empty());
    let removed = unregister_controller(&image, 2, 1);
    assert_eq!(removed.response, (ErrorCode::None, None));
    let mut records = registered;
    records.extend(removed.records);
    assert!(image_at(33, &records).cluster.controller(2).is_none());
}

/// KIP-1312: UnregisterControllerRecord needs metadata.version 4.4-IV2 (33).
#[test]
fn unregister_controller_needs_metadata_version_4_4_iv2() {
    let registered = register_controller(&image_at(32, &[]), &request(2, 1, 9093)).records;
    let old = unregister_controller(&image_at(32, &registered), 2, 1);
    assert!(old.records.is_empty());
    assert_eq!(
        old.response,
        (
            ErrorCode::UnsupportedVersion,
            Some(
                "The current MetadataVersion is too old to support controller unregistration."
                    .to_string()
            )
        )
    );
}
