//! Controller registrations (KIP-919) and their removal (KIP-1312), as Kafka 4.4's
//! `ClusterControlManager.registerController` / `unregisterController`: every controller
//! registers its incarnation, listeners and supported feature ranges with the active
//! controller, which writes a `RegisterControllerRecord` (a newer registration of the same
//! id replaces the older); UnregisterController writes an `UnregisterControllerRecord`.
//! Pure functions of the image, so the QuorumController stays deterministic.

use kraftd_protocol::messages::ControllerRegistrationRequest;
use kraftd_protocol::metadata::register_controller_record::{
    ControllerEndpoint, ControllerFeature,
};
use kraftd_protocol::metadata::{RegisterControllerRecord, UnregisterControllerRecord};
use kraftd_protocol::{ErrorCode, MetadataRecord};

use crate::control::result::ControllerResult;
use crate::image::{MetadataImage, METADATA_VERSION_FEATURE};

/// The first `metadata.version` with controller registrations (3.7-IV0), Kafka's
/// `isControllerRegistrationSupported`.
pub const CONTROLLER_REGISTRATION_MIN_METADATA_VERSION: i16 = 15;

/// An error code with Kafka's message, or success.
pub type Outcome = (ErrorCode, Option<String>);

/// ControllerRegistration: the registration record, atomically; UNSUPPORTED_VERSION below
/// 3.7-IV0 with Kafka's message.
pub fn register_controller(
    image: &MetadataImage,
    request: &ControllerRegistrationRequest,
) -> ControllerResult<Outcome> {
    if image.features.level(METADATA_VERSION_FEATURE) < CONTROLLER_REGISTRATION_MIN_METADATA_VERSION
    {
        return ControllerResult::response_only((
            ErrorCode::UnsupportedVersion,
            Some(
                "The current MetadataVersion is too old to support controller registrations."
                    .to_string(),
            ),
        ));
    }
    let record = RegisterControllerRecord {
        controller_id: request.controller_id,
        incarnation_id: request.incarnation_id,
        zk_migration_ready: request.zk_migration_ready,
        end_points: request
            .listeners
            .iter()
            .map(|l| ControllerEndpoint {
                name: l.name.clone(),
                host: l.host.clone(),
                port: l.port,
                security_protocol: l.security_protocol,
                ..Default::default()
            })
            .collect(),
        features: request
            .features
            .iter()
            .map(|f| ControllerFeature {
                name: f.name.clone(),
                min_supported_version: f.min_supported_version,
                max_supported_version: f.max_supported_version,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    ControllerResult::atomic_of(
        vec![MetadataRecord::RegisterController(record)],
        (ErrorCode::None, None),
    )
}

/// UnregisterController (KIP-1312): CONTROLLER_ID_NOT_REGISTERED for an id without a
/// registration, INVALID_REQUEST for the active controller itself (`active_id`), with
/// Kafka's messages. Kafka also refuses it below metadata.version 4.4-IV2, which kraftd does
/// not reach; every kraftd replays the record, so kraftd serves it at any level.
pub fn unregister_controller(
    image: &MetadataImage,
    controller_id: i32,
    active_id: i32,
) -> ControllerResult<Outcome> {
    if controller_id == active_id {
        return ControllerResult::response_only((
            ErrorCode::InvalidRequest,
            Some("Controller cannot unregister itself while it is active.".to_string()),
        ));
    }
    // KIP-1312: UnregisterControllerRecord exists from 4.4-IV2 on, as Kafka's
    // `ClusterControlManager.unregisterController` checks.
    if !image
        .features
        .version()
        .is_controller_unregistration_supported()
    {
        return ControllerResult::response_only((
            ErrorCode::UnsupportedVersion,
            Some(
                "The current MetadataVersion is too old to support controller unregistration."
                    .to_string(),
            ),
        ));
    }
    if image.cluster.controller(controller_id).is_none() {
        return ControllerResult::response_only((
            ErrorCode::ControllerIdNotRegistered,
            Some(format!(
                "Controller ID {controller_id} is not currently registered."
            )),
        ));
    }
    ControllerResult::atomic_of(
        vec![MetadataRecord::UnregisterController(
            UnregisterControllerRecord {
                controller_id,
                ..Default::default()
            },
        )],
        (ErrorCode::None, None),
    )
}

#[cfg(test)]
mod tests;
