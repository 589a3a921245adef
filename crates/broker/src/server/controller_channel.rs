//! A broker's way to the active controller (Kafka's `NodeToControllerChannelManager`): the
//! Raft layer says who leads the metadata quorum (`current-leader`), the static voter list
//! (`controller.quorum.voters`) says where it listens, or for a dynamic quorum (KIP-853)
//! the leader's endpoint the Raft layer knows (the voter set's, as Kafka's
//! `RaftControllerNodeProvider`), and a request that meets a standby
//! (NOT_CONTROLLER), a dead connection or a timeout is retried against whoever leads next,
//! until the caller's deadline. The lifecycle manager and the forwarding manager each own one,
//! so heartbeats never queue behind forwarded admin requests.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use kraftd_net::{Channel, ClientConfig};
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::{RequestBody, ResponseBody};
use kraftd_raft::driver::{RaftMetrics, VoterEndpoint};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::debug;

/// Kafka's `controller.socket.timeout.ms` default: how long a request to the controller
/// waits for its answer.
pub const CONTROLLER_SOCKET_TIMEOUT_MS_DEFAULT: i32 = 30_000;

/// The pause before asking again when no controller is known or the last one failed.
pub const CONTROLLER_RETRY_BACKOFF: Duration = Duration::from_millis(50);

/// Why no controller answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllerChannelError {
    #[error("no active controller answered within the deadline (last: {0})")]
    Timeout(String),
}

/// Sends requests to the active controller.
#[derive(Debug)]
pub struct ControllerChannel {
    voters: BTreeMap<i32, VoterEndpoint>,
    raft: watch::Receiver<RaftMetrics>,
    client: ClientConfig,
    /// By address: a dynamic quorum's controller may come back elsewhere.
    channels: Mutex<HashMap<String, Channel>>,
}

impl ControllerChannel {
    pub fn new(
        client_id: String,
        voters: BTreeMap<i32, VoterEndpoint>,
        raft: watch::Receiver<RaftMetrics>,
        request_timeout: Duration,
        security: kraftd_net::ClientSecurity,
    ) -> Self {
        ControllerChannel {
            voters,
            raft,
            client: ClientConfig {
                request_timeout,
                security,
                ..ClientConfig::new(client_id)
            },
            channels: Mutex::new(HashMap::new()),
        }
    }

    /// The controller the Raft layer names as leader, if any.
    pub fn active_controller(&self) -> Option<i32> {
        let leader = self.raft.borrow().current_leader;
        (leader >= 0).then_some(leader)
    }

    /// The channel to controller `id`: its static voter address, else the leader endpoint
    /// Raft knows for it.
    fn channel(&self, id: i32) -> Option<Channel> {
        let address = match self.voters.get(&id) {
            Some(endpoint) => endpoint.address(),
            None => {
                let raft = self.raft.borrow();
                if raft.current_leader != id {
                    return None;
                }
                raft.leader_endpoint.clone()?
            }
        };
        let mut channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        Some(
            channels
                .entry(address.clone())
                .or_insert_with(|| Channel::spawn(address, self.client.clone()))
                .clone(),
        )
    }

    /// Sends `body` at `version` (or the highest stable version when `None`) to the active
    /// controller, again after NOT_CONTROLLER (`retry` says which responses mean that) or a
    /// failed connection, until `deadline`.
    pub async fn send(
        &self,
        version: Option<i16>,
        body: RequestBody,
        deadline: Instant,
        retry: impl Fn(&ResponseBody) -> bool,
    ) -> Result<ResponseBody, ControllerChannelError> {
        let version = version.unwrap_or_else(|| supported_range(body.key()).max);
        let mut last = "no controller known".to_string();
        let mut raft = self.raft.clone();
        loop {
            if Instant::now() >= deadline {
                return Err(ControllerChannelError::Timeout(last));
            }
            let Some(id) = self.active_controller() else {
                // Wait for Raft to name a leader, or the backoff.
                let _ = tokio::time::timeout_at(
                    deadline.min(Instant::now() + CONTROLLER_RETRY_BACKOFF * 10),
                    raft.changed(),
                )
                .await;
                continue;
            };
            let Some(channel) = self.channel(id) else {
                last = format!("no endpoint known for controller {id}");
                tokio::time::sleep(CONTROLLER_RETRY_BACKOFF).await;
                continue;
            };
            let call = channel.call(channel.next_correlation_id(), version, body.clone());
            match tokio::time::timeout_at(deadline, call).await {
                Ok(Ok(response)) if !retry(&response) => return Ok(response),
                Ok(Ok(_)) => {
                    last = format!("controller {id} is not the active controller");
                    debug!(controller = id, api = ?body.key(), "NOT_CONTROLLER; retrying");
                }
                Ok(Err(e)) => {
                    last = format!("controller {id}: {e}");
                    debug!(controller = id, api = ?body.key(), error = %e, "controller request failed; retrying");
                }
                Err(_) => return Err(ControllerChannelError::Timeout(last)),
            }
            tokio::time::sleep(CONTROLLER_RETRY_BACKOFF).await;
        }
    }
}
