//! `kraft.version` through UpdateFeatures (KIP-853's upgrade of a static quorum to a dynamic
//! one, Kafka 4.1+: `kafka-features upgrade --feature kraft.version=1`). The level is not a
//! metadata record: Kafka's `FeatureControlManager` hands it to the Raft client
//! (`RaftClient.upgradeKRaftVersion`), which writes the KRaftVersionRecord and a VotersRecord
//! of the static voters. Here the request is split: `kraft.version` goes to the Raft leader
//! through the router ([`RaftRequestRouter::upgrade_kraft_version`]), the other features to
//! the QuorumController as before, and the answers are merged.

use kraftd_protocol::messages::update_features_response::UpdatableFeatureResult;
use kraftd_protocol::messages::{UpdateFeaturesRequest, UpdateFeaturesResponse};
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody};
use kraftd_raft::driver::RaftRequestRouter;

use crate::control::features::KRAFT_VERSION_FEATURE;

/// Whether an UpdateFeatures names `kraft.version`.
pub(crate) fn names_kraft_version(body: &RequestBody) -> bool {
    matches!(body, RequestBody::UpdateFeatures(r)
        if r.feature_updates.iter().any(|u| u.feature == KRAFT_VERSION_FEATURE))
}

/// The `kraft.version` part of `request` at the Raft leader: `Ok` with the remaining
/// request (the other features), or the whole answer when the upgrade was refused (Kafka
/// fails the request as one) or nothing else is left.
pub(crate) async fn upgrade(
    router: &RaftRequestRouter,
    mut request: UpdateFeaturesRequest,
) -> Result<(UpdateFeaturesRequest, UpdatableFeatureResult), ResponseBody> {
    let Some(i) = request
        .feature_updates
        .iter()
        .position(|u| u.feature == KRAFT_VERSION_FEATURE)
    else {
        return Err(answer(&request, ErrorCode::InvalidRequest, None));
    };
    let update = request.feature_updates.remove(i);
    let outcome = router
        .upgrade_kraft_version(update.max_version_level, request.validate_only)
        .await;
    let (code, message) = match outcome {
        Ok(_) => (ErrorCode::None, None),
        // The active controller is the Raft leader: a node that is not answers as Kafka's
        // controllers do.
        Err(e) if e.code == ErrorCode::NotLeaderOrFollower => {
            (ErrorCode::NotController, Some(e.message))
        }
        Err(e) => (e.code, Some(e.message)),
    };
    let result = UpdatableFeatureResult {
        feature: update.feature.clone(),
        error_code: code.code(),
        error_message: message.clone(),
        ..Default::default()
    };
    if code != ErrorCode::None || request.feature_updates.is_empty() {
        request.feature_updates.insert(i, update);
        return Err(answer(&request, code, message));
    }
    Ok((request, result))
}

/// Adds the `kraft.version` result to the answer for the other features.
pub(crate) fn merge(response: ResponseBody, result: UpdatableFeatureResult) -> ResponseBody {
    match response {
        ResponseBody::UpdateFeatures(mut r) => {
            r.results.insert(0, result);
            ResponseBody::UpdateFeatures(r)
        }
        other => other,
    }
}

/// One error (or none) for every feature of `request`, as `FeatureControlManager` answers.
fn answer(
    request: &UpdateFeaturesRequest,
    code: ErrorCode,
    message: Option<String>,
) -> ResponseBody {
    ResponseBody::UpdateFeatures(UpdateFeaturesResponse {
        error_code: code.code(),
        error_message: message.clone(),
        results: request
            .feature_updates
            .iter()
            .map(|u| UpdatableFeatureResult {
                feature: u.feature.clone(),
                error_code: code.code(),
                error_message: message.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}
