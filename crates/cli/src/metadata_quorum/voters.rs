//! `kraftd metadata-quorum add-controller` / `remove-controller`, as Kafka 4.4's
//! `kafka-metadata-quorum` (`MetadataQuorumCommand.handleAddController` /
//! `handleRemoveController`): add-controller reads the joining controller's own properties
//! file (`--command-config`, which also says how to reach the quorum): its `node.id`, the
//! `directory.id` in its metadata log directory's `meta.properties`, and its advertised
//! controller listeners; then AddRaftVoter (v1, acknowledged once committed) or
//! RemoveRaftVoter goes to the active controller, found through DescribeCluster as Kafka's
//! admin client finds it. The tool's messages are Kafka's, word for word.

use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use kraftd_net::{Channel, ClientConfig, ClientSecurity};
use kraftd_protocol::messages::add_raft_voter_request::Listener as VoterListener;
use kraftd_protocol::messages::{
    AddRaftVoterRequest, DescribeClusterRequest, RemoveRaftVoterRequest,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};

use super::{api_versions, call, error_name, ENDPOINT_TYPE_CONTROLLER};
use crate::config::parse_listeners;
use crate::format::MetaProperties;
use crate::properties::Properties;

/// The `timeoutMs` of AddRaftVoter: how long the leader may wait for the new voter to
/// catch up and the change to commit (Kafka's admin client sends its API timeout).
pub const ADD_TIMEOUT: Duration = Duration::from_secs(30);

/// How long to keep retrying while the quorum has no active controller, or the one asked
/// is no longer it.
const RETRY_FOR: Duration = Duration::from_secs(30);

/// The controller a file describes: what add-controller sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoiningController {
    pub id: i32,
    pub directory_id: Uuid,
    /// `(listener name, host, port)` for each of `controller.listener.names`, advertised.
    pub endpoints: Vec<(String, String, u16)>,
}

/// Reads the joining controller from its properties, as Kafka's tool does (its messages).
pub fn joining_controller(props: &Properties) -> Result<JoiningController> {
    let id = match props.get("node.id") {
        None => bail!(
            "node.id not found in configuration file. Is this a valid controller configuration \
             file?"
        ),
        Some(v) => v
            .trim()
            .parse::<i32>()
            .map_err(|_| anyhow!("node.id {v:?} in {} is not a number", props.source()))?,
    };
    if id < 0 {
        bail!("node.id was negative in configuration file. Is this a valid controller configuration file?");
    }
    if !props
        .get("process.roles")
        .unwrap_or("")
        .contains("controller")
    {
        bail!(
            "process.roles did not contain 'controller' in configuration file. Is this a valid \
             controller configuration file?"
        );
    }
    let metadata_dir = match (props.get("metadata.log.dir"), props.get("log.dirs")) {
        (Some(dir), _) => dir.trim().to_string(),
        (None, Some(dirs)) => dirs
            .trim()
            .split(',')
            .next()
            .unwrap_or("")
            .trim()
            .to_string(),
        (None, None) => bail!(
            "Neither metadata.log.dir nor log.dirs were found. Is this a valid controller \
             configuration file?"
        ),
    };
    let meta = MetaProperties::read(Path::new(&metadata_dir))?
        .ok_or_else(|| anyhow!("Unable to read meta.properties from {metadata_dir}"))?;
    let directory_id = crate::format::parse_uuid(&meta.directory_id)
        .map_err(|_| anyhow!("No directory id found in {metadata_dir}"))?;
    let mut listeners = parse_listeners(props.get("listeners").unwrap_or(""))
        .map_err(|why| anyhow!("invalid listeners in {}: {why}", props.source()))?;
    let advertised = parse_listeners(props.get("advertised.listeners").unwrap_or(""))
        .map_err(|why| anyhow!("invalid advertised.listeners in {}: {why}", props.source()))?;
    for l in advertised {
        listeners.retain(|k| k.name != l.name);
        listeners.push(l);
    }
    let names = props.get("controller.listener.names").ok_or_else(|| {
        anyhow!(
            "controller.listener.names was not found. Is this a valid controller configuration \
             file?"
        )
    })?;
    let mut endpoints = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let l = listeners
            .iter()
            .find(|l| l.name.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                anyhow!("Cannot find information about controller listener name: {name}")
            })?;
        let host = if l.host.is_empty() {
            "localhost".to_string()
        } else {
            l.host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string()
        };
        endpoints.push((l.name.clone(), host, l.port));
    }
    Ok(JoiningController {
        id,
        directory_id,
        endpoints,
    })
}

/// `NAME://host:port, ...` as Kafka's tool prints endpoints (IPv6 hosts in brackets).
pub fn endpoints_text(endpoints: &[(String, String, u16)]) -> String {
    endpoints
        .iter()
        .map(|(name, host, port)| {
            if host.contains(':') {
                format!("{name}://[{host}]:{port}")
            } else {
                format!("{name}://{host}:{port}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Kafka's output line for add-controller.
pub fn added_text(c: &JoiningController, dry_run: bool) -> String {
    format!(
        "{} controller {} with directory id {} and endpoints: {}",
        if dry_run {
            "DRY RUN of adding"
        } else {
            "Added"
        },
        c.id,
        c.directory_id.to_base64(),
        endpoints_text(&c.endpoints)
    )
}

/// Kafka's output line for remove-controller (with its two spaces).
pub fn removed_text(id: i32, directory_id: &Uuid, dry_run: bool) -> String {
    format!(
        "{} KRaft controller {id} with directory id {}",
        if dry_run {
            "DRY RUN of removing "
        } else {
            "Removed "
        },
        directory_id.to_base64()
    )
}

/// Checks remove-controller's arguments as Kafka's tool does.
pub fn removal_args(id: i32, directory_id: &str) -> Result<Uuid> {
    if id < 0 {
        bail!("Invalid negative --controller-id: {id}");
    }
    Uuid::from_base64(directory_id).ok_or_else(|| {
        anyhow!(
            "Failed to parse --controller-directory-id: {directory_id:?} is not a 22-character \
             URL-safe base64 uuid"
        )
    })
}

/// The AddRaftVoter request for `c`.
pub fn add_request(c: &JoiningController) -> RequestBody {
    RequestBody::AddRaftVoter(AddRaftVoterRequest {
        cluster_id: None,
        timeout_ms: ADD_TIMEOUT.as_millis() as i32,
        voter_id: c.id,
        voter_directory_id: c.directory_id,
        listeners: c
            .endpoints
            .iter()
            .map(|(name, host, port)| VoterListener {
                name: name.clone(),
                host: host.clone(),
                port: *port,
                ..Default::default()
            })
            .collect(),
        ack_when_committed: true,
        ..Default::default()
    })
}

/// The RemoveRaftVoter request.
pub fn remove_request(id: i32, directory_id: Uuid) -> RequestBody {
    RequestBody::RemoveRaftVoter(RemoveRaftVoterRequest {
        cluster_id: None,
        voter_id: id,
        voter_directory_id: directory_id,
        ..Default::default()
    })
}

/// Errors worth asking again for: the quorum is between leaders, or the asked controller
/// stopped being the active one.
fn retriable(code: i16) -> bool {
    [
        ErrorCode::NotLeaderOrFollower,
        ErrorCode::NotController,
        ErrorCode::RequestTimedOut,
    ]
    .iter()
    .any(|e| e.code() == code)
}

/// Sends `request` (AddRaftVoter or RemoveRaftVoter) to the active controller, retrying for
/// [`RETRY_FOR`] while there is none or it moves; Kafka's error name and message otherwise.
pub async fn change_voters(
    addresses: &[String],
    security: &ClientSecurity,
    request: RequestBody,
) -> Result<()> {
    let key = request.key();
    let deadline = tokio::time::Instant::now() + RETRY_FOR;
    loop {
        let mut last = String::new();
        for address in addresses {
            match send_to_active(address, security, request.clone()).await {
                Ok((_, code, _)) if code == ErrorCode::None.code() => return Ok(()),
                Ok((at, code, message)) if !retriable(code) => bail!(
                    "{at}: {key:?} failed: {}{}",
                    error_name(code),
                    message
                        .filter(|m| !m.is_empty())
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ),
                Ok((at, code, _)) => last = format!("{at}: {key:?} failed: {}", error_name(code)),
                Err(e) => last = e.to_string(),
            }
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("{last}");
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Through `address`, finds the active controller (DescribeCluster) and sends it `request`;
/// the address answered, its error code and message.
async fn send_to_active(
    address: &str,
    security: &ClientSecurity,
    request: RequestBody,
) -> Result<(String, i16, Option<String>)> {
    let first = channel(address, security);
    let versions = api_versions(&first).await?;
    let mut target = first.clone();
    if let Some(version) = versions.pick(ApiKey::DescribeCluster).filter(|v| *v >= 1) {
        let describe = RequestBody::DescribeCluster(DescribeClusterRequest {
            endpoint_type: ENDPOINT_TYPE_CONTROLLER,
            ..Default::default()
        });
        if let ResponseBody::DescribeCluster(r) = call(&first, version, describe).await? {
            if r.error_code == ErrorCode::None.code() {
                if let Some(active) = r.brokers.iter().find(|b| b.broker_id == r.controller_id) {
                    let active_address = format!("{}:{}", active.host, active.port);
                    if active_address != address {
                        target = channel(&active_address, security);
                    }
                }
            }
        }
    }
    let target_versions = if target.destination() == address {
        versions
    } else {
        api_versions(&target).await?
    };
    let key = request.key();
    let at = target.destination().to_string();
    let version = target_versions
        .pick(key)
        .ok_or_else(|| anyhow!("{at}: does not serve {key:?} (a static quorum's controller?)"))?;
    match call(&target, version, request).await? {
        ResponseBody::AddRaftVoter(r) => Ok((at, r.error_code, r.error_message)),
        ResponseBody::RemoveRaftVoter(r) => Ok((at, r.error_code, r.error_message)),
        _ => bail!("{at}: answered {key:?} with another response"),
    }
}

/// A channel whose request timeout outlasts AddRaftVoter's own `timeoutMs`.
fn channel(address: &str, security: &ClientSecurity) -> Channel {
    let config = ClientConfig {
        request_timeout: ADD_TIMEOUT + Duration::from_secs(5),
        security: security.clone(),
        ..ClientConfig::new(super::CLIENT_ID)
    };
    Channel::spawn(address, config)
}

#[cfg(test)]
mod tests;
