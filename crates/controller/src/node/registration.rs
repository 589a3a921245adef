//! The controller's registration manager (Kafka's `ControllerRegistrationManager`, KIP-919):
//! once this controller knows the active controller and the committed metadata supports
//! registrations (3.7-IV0+), it sends ControllerRegistration v0 (its incarnation id, its
//! advertised controller listeners, its supported feature ranges, zk-migration-ready
//! false) until the committed image holds its registration under this incarnation; again
//! whenever the image loses it (UnregisterController of a live controller, as Kafka's).
//!
//! The active controller registers through its own event loop; a standby sends the request
//! to the active controller's controller listener, found in the image's registrations (the
//! active one registered itself first) or, for a static quorum, `controller.quorum.voters`.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kraftd_net::{Channel, ClientConfig, ClientSecurity};
use kraftd_protocol::messages::controller_registration_request::{Feature, Listener};
use kraftd_protocol::messages::ControllerRegistrationRequest;
use kraftd_protocol::{ErrorCode, RequestBody, ResponseBody, Uuid};
use kraftd_raft::driver::VoterEndpoint;
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, info};

use super::event_loop::{ControllerRequest, ControllerStatus};
use crate::control::controller_registration::CONTROLLER_REGISTRATION_MIN_METADATA_VERSION;
use crate::image::METADATA_VERSION_FEATURE;
use crate::quota::ControllerMutationQuota;

/// How long to wait after a failed attempt, or for a sent registration to commit.
const RETRY: Duration = Duration::from_millis(500);

/// What this controller registers.
#[derive(Debug, Clone, Default)]
pub struct RegistrationConfig {
    pub node_id: i32,
    /// Drawn at each start: a restarted controller registers anew.
    pub incarnation_id: Uuid,
    /// The advertised controller listeners: name, host, port, security protocol id.
    pub listeners: Vec<(String, String, u16, i16)>,
    /// Supported feature ranges: name, min, max.
    pub features: Vec<(String, i16, i16)>,
    /// The listener name other controllers are reached on (the first controller listener).
    pub controller_listener_name: String,
    /// `controller.quorum.voters` (empty for a dynamic quorum).
    pub voters: BTreeMap<i32, VoterEndpoint>,
    pub client_security: ClientSecurity,
}

impl RegistrationConfig {
    /// The ControllerRegistration request.
    pub fn request(&self) -> ControllerRegistrationRequest {
        ControllerRegistrationRequest {
            controller_id: self.node_id,
            incarnation_id: self.incarnation_id,
            zk_migration_ready: false,
            listeners: self
                .listeners
                .iter()
                .map(|(name, host, port, protocol)| Listener {
                    name: name.clone(),
                    host: host.clone(),
                    port: *port,
                    security_protocol: *protocol,
                    ..Default::default()
                })
                .collect(),
            features: self
                .features
                .iter()
                .map(|(name, min, max)| Feature {
                    name: name.clone(),
                    min_supported_version: *min,
                    max_supported_version: *max,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }
}

/// What the manager should do now, from the committed status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// Registered under this incarnation, or not possible yet: wait for a change.
    Wait,
    /// Register through the local event loop (this node is active).
    Local,
    /// Register with the active controller at this address.
    Remote(String),
}

/// Decides from the committed status (pure, for tests).
pub fn next(config: &RegistrationConfig, status: &ControllerStatus) -> Next {
    let image = &status.image;
    let registered = image
        .cluster
        .controller(config.node_id)
        .is_some_and(|r| r.incarnation_id == config.incarnation_id);
    if registered
        || image.features.level(METADATA_VERSION_FEATURE)
            < CONTROLLER_REGISTRATION_MIN_METADATA_VERSION
    {
        return Next::Wait;
    }
    let Some(leader) = status.leader_id.filter(|l| *l >= 0) else {
        return Next::Wait;
    };
    if status.active || leader == config.node_id {
        return Next::Local;
    }
    let registered_endpoint = image.cluster.controller(leader).and_then(|r| {
        r.listeners
            .get(&config.controller_listener_name)
            .or_else(|| r.listeners.values().next())
            .map(|e| endpoint_address(&e.host, e.port))
    });
    match registered_endpoint.or_else(|| config.voters.get(&leader).map(|v| v.address())) {
        Some(address) => Next::Remote(address),
        None => Next::Wait,
    }
}

fn endpoint_address(host: &str, port: u16) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Runs until the node stops (the task is aborted).
pub(crate) async fn run(
    config: RegistrationConfig,
    mut status: watch::Receiver<ControllerStatus>,
    requests: mpsc::Sender<ControllerRequest>,
) {
    let mut channels: BTreeMap<String, Channel> = BTreeMap::new();
    let mut logged_for: Option<i32> = None;
    loop {
        let decision = next(&config, &status.borrow_and_update());
        let result = match &decision {
            Next::Wait => {
                if status.changed().await.is_err() {
                    return;
                }
                continue;
            }
            Next::Local => register_locally(&config, &requests).await,
            Next::Remote(address) => {
                let channel = channels.entry(address.clone()).or_insert_with(|| {
                    let client = ClientConfig {
                        security: config.client_security.clone(),
                        ..ClientConfig::new(format!("controller-registration-{}", config.node_id))
                    };
                    Channel::spawn(address.clone(), client)
                });
                register_remotely(&config, channel).await
            }
        };
        match result {
            Ok(()) => {
                if logged_for != Some(config.node_id) {
                    info!(
                        node = config.node_id,
                        "controller registration sent: {decision:?}"
                    );
                    logged_for = Some(config.node_id);
                }
            }
            Err(e) => debug!(node = config.node_id, "controller registration failed: {e}"),
        }
        // Wait for the registration to commit (or the quorum to move), at most RETRY.
        let until = Instant::now() + RETRY;
        let _ = tokio::time::timeout_at(until.into(), status.changed()).await;
        tokio::time::sleep_until((until).into()).await;
    }
}

async fn register_locally(
    config: &RegistrationConfig,
    requests: &mpsc::Sender<ControllerRequest>,
) -> Result<(), String> {
    let (reply, rx) = oneshot::channel();
    let request = ControllerRequest {
        version: 0,
        body: RequestBody::ControllerRegistration(config.request()),
        reply,
        quota: ControllerMutationQuota::unbounded(),
        // The controller itself: no client principal.
        principal: kraftd_net::KafkaPrincipal::anonymous(),
        enqueued: Instant::now(),
        forwarded: false,
    };
    requests
        .send(request)
        .await
        .map_err(|_| "the event loop stopped".to_string())?;
    match rx.await {
        Ok(Ok(response)) => check(response),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err("the event loop dropped the request".to_string()),
    }
}

async fn register_remotely(config: &RegistrationConfig, channel: &Channel) -> Result<(), String> {
    let body = RequestBody::ControllerRegistration(config.request());
    let response = channel
        .call(channel.next_correlation_id(), 0, body)
        .await
        .map_err(|e| format!("{}: {e}", channel.destination()))?;
    check(response)
}

fn check(response: ResponseBody) -> Result<(), String> {
    match response {
        ResponseBody::ControllerRegistration(r) if r.error_code == ErrorCode::None.code() => Ok(()),
        ResponseBody::ControllerRegistration(r) => Err(format!(
            "{}{}",
            ErrorCode::from_code(r.error_code)
                .map_or_else(|| format!("error {}", r.error_code), |e| e.to_string()),
            r.error_message
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        )),
        other => Err(format!("answered with {:?}", other.key())),
    }
}

#[cfg(test)]
mod tests;
