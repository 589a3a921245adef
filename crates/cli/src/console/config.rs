//! The console's configuration: what it reads and whom it asks, from the node's properties
//! (`console.enable`, `console.metrics.endpoints`, the listeners, the quorum and the
//! authorizer) and the roles the node runs.

use std::sync::{Arc, Mutex};

use anyhow::{anyhow, Result};
use kraftd_broker::server::BrokerServer;
use kraftd_controller::auth::AuthHelper;
use kraftd_controller::node::ControllerNode;
use kraftd_controller::MetadataImage;
use kraftd_net::sasl::SaslMechanism;
use kraftd_net::ClientSecurity;

use super::login::LoginConfig;
use super::{Console, HealthSources, CONSOLE_ENABLE, CONSOLE_METRICS_ENDPOINTS};
use crate::config::{NodeConfig, ProcessRole};

/// The node's current metadata image (the broker's, else the controller's committed).
pub type ImageSource = Arc<dyn Fn() -> Arc<MetadataImage> + Send + Sync>;

/// Where the console reads from: the node's image and the addresses it asks.
pub struct ConsoleConfig {
    pub node_id: i32,
    pub cluster_id: String,
    pub image: ImageSource,
    /// A client listener of this node (name, `host:port`) and how to connect to it; `None`
    /// on a controller-only node (no group or offset pages then).
    pub client_listener: Option<(String, String, ClientSecurity)>,
    pub health: HealthSources,
    /// `authorizer.class.name` is set: without [`Self::login`], everything but the refusal
    /// is off.
    pub authorizer: bool,
    /// With an authorizer: the SASL listener logins go through.
    pub login: Option<LoginConfig>,
}

/// This node's `/metrics` text, which the health page reads.
pub type RenderMetrics = Arc<dyn Fn() -> String + Send + Sync>;

/// The console of this node when `console.enable` is true, over the image of the role it
/// runs (the broker's, else the controller's) and, with an authorizer (`authorizer`),
/// logins checked by its broker; None when off.
pub fn node_console(
    config: &NodeConfig,
    cluster_id: &str,
    authorizer: bool,
    broker: Option<&BrokerServer>,
    controller: Option<&ControllerNode>,
    render_metrics: RenderMetrics,
) -> Result<Option<Console>> {
    if !config.boolean(CONSOLE_ENABLE, false)? {
        return Ok(None);
    }
    let image: ImageSource = match (broker, controller) {
        (Some(b), _) => {
            let cache = b.cache().clone();
            Arc::new(move || cache.image())
        }
        (None, Some(c)) => {
            // One Arc per published image, so the console's per-image summary is kept
            // until the image changes.
            let mut status = c.status();
            let first = Arc::new(status.borrow_and_update().image.clone());
            let latest = Mutex::new((status, first));
            Arc::new(move || {
                let mut latest = latest.lock().expect("console image");
                if latest.0.has_changed().unwrap_or(false) {
                    let image = latest.0.borrow_and_update().image.clone();
                    latest.1 = Arc::new(image);
                }
                Arc::clone(&latest.1)
            })
        }
        (None, None) => return Err(anyhow!("no role to serve a console of")),
    };
    Ok(Some(Console::new(console_config(
        config,
        cluster_id,
        authorizer,
        image,
        render_metrics,
        broker.map(BrokerServer::auth_helper),
    )?)))
}

/// What the console reads: the image, this node's first PLAINTEXT-or-configured client
/// listener (reached at its advertised address, as clients reach it) and the controllers
/// the node was configured with, for the doctor's rules.
fn console_config(
    config: &NodeConfig,
    cluster_id: &str,
    authorizer: bool,
    image: ImageSource,
    render_metrics: RenderMetrics,
    auth: Option<AuthHelper>,
) -> Result<ConsoleConfig> {
    // With an authorizer, logins go through the first client listener whose SASL enables a
    // password mechanism (SCRAM first, then PLAIN).
    let login = match (authorizer, auth) {
        (true, Some(auth)) if config.roles.contains(&ProcessRole::Broker) => config
            .broker_listeners()
            .into_iter()
            .find_map(|(listener, advertised)| {
                let server = config.sasl.servers.get(&listener.name)?;
                let mut mechanisms: Vec<SaslMechanism> = [
                    SaslMechanism::ScramSha512,
                    SaslMechanism::ScramSha256,
                    SaslMechanism::Plain,
                ]
                .into_iter()
                .filter(|m| server.mechanisms.contains(m))
                .collect();
                mechanisms.dedup();
                (!mechanisms.is_empty()).then(|| LoginConfig {
                    listener: listener.name.clone(),
                    address: format!("{}:{}", advertised.host, advertised.port),
                    security: ClientSecurity {
                        sasl: None,
                        ..config.client_security(&listener.name)
                    },
                    mechanisms,
                    auth: auth.clone(),
                })
            }),
        _ => None,
    };
    let client_listener = if config.roles.contains(&ProcessRole::Broker) {
        config
            .broker_listeners()
            .into_iter()
            .next()
            .map(|(listener, advertised)| {
                let security = config.client_security(&listener.name);
                (
                    listener.name.clone(),
                    format!("{}:{}", advertised.host, advertised.port),
                    security,
                )
            })
    } else {
        None
    };
    let mut controllers: Vec<String> = config
        .voters
        .values()
        .map(|v| format!("{}:{}", v.host, v.port))
        .collect();
    if controllers.is_empty() {
        controllers = config
            .bootstrap_servers
            .iter()
            .map(|v| format!("{}:{}", v.host, v.port))
            .collect();
    }
    let controller_security = config
        .controller_listener_names
        .first()
        .map(|name| config.client_security(name))
        .unwrap_or_default();
    // `host:port,...` as controller.quorum.bootstrap.servers is written, checked the same way.
    let metrics_endpoints = match config.props.get(CONSOLE_METRICS_ENDPOINTS) {
        Some(v) => kraftd_raft::driver::parse_bootstrap_servers(v, &Default::default())
            .map_err(|e| {
                anyhow!(
                    "invalid value {v:?} for {} in {}: {e}",
                    CONSOLE_METRICS_ENDPOINTS,
                    config.props.source()
                )
            })?
            .into_iter()
            .map(|e| format!("{}:{}", e.host, e.port))
            .collect(),
        None => Vec::new(),
    };
    Ok(ConsoleConfig {
        node_id: config.node_id,
        cluster_id: cluster_id.to_string(),
        image,
        health: HealthSources {
            controllers,
            controller_security,
            broker: client_listener.as_ref().map(|(_, a, _)| a.clone()),
            broker_security: client_listener
                .as_ref()
                .map(|(_, _, s)| s.clone())
                .unwrap_or_default(),
            render_metrics,
            metrics_endpoints,
            max_clock_skew_ms: 1_000,
        },
        client_listener,
        authorizer,
        login,
    })
}
