//! A node's configuration from Kafka's property names (`server.properties` plus `--override
//! key=value` flags), validated up front: a bad value, or a broker config kraftd does not
//! support set to anything but Kafka's default, stops the start with one line naming the
//! key, the value and where it came from.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::str::FromStr;

use anyhow::{anyhow, bail, Result};
use kraftd_controller::control::config_defs::{
    any_broker_config_def, check_static_sasl_mechanisms, check_static_support,
    is_known_node_property, ConfigType, ConfigValueError, SaslListeners,
};
use kraftd_net::{ClientSecurity, ListenerSecurity, SecurityProtocol};
use kraftd_raft::driver::{parse_bootstrap_servers, parse_voters, VoterEndpoint};

use crate::properties::Properties;
use crate::security::sasl::SaslSettings;
use crate::security::tls::NodeTls;

/// Kafka's `log.dir` default, used when neither `log.dirs` nor `log.dir` is set.
pub const LOG_DIR_DEFAULT: &str = "/tmp/kraft-combined-logs";

/// `process.roles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessRole {
    Broker,
    Controller,
}

/// One entry of `listeners`: `NAME://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub name: String,
    pub host: String,
    pub port: u16,
}

impl Listener {
    /// `host:port` to bind (an empty host binds every interface, as in Kafka).
    pub fn bind_address(&self) -> String {
        let host = if self.host.is_empty() {
            "0.0.0.0"
        } else {
            &self.host
        };
        if host.contains(':') {
            format!("[{host}]:{}", self.port)
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

/// The settings kraftd reads, by Kafka's names.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    pub props: Properties,
    pub roles: Vec<ProcessRole>,
    pub node_id: i32,
    /// `controller.quorum.voters`; empty for a dynamic quorum (KIP-853), whose voters come
    /// from the bootstrap snapshot and the log.
    pub voters: BTreeMap<i32, VoterEndpoint>,
    /// `controller.quorum.bootstrap.servers` (with static voters, or alone for a dynamic
    /// quorum, KIP-853): each entry the voter
    /// whose endpoint it names, or a negative id (-2, -3, ...) with its own endpoint.
    pub bootstrap_servers: Vec<VoterEndpoint>,
    pub listeners: Vec<Listener>,
    pub controller_listener_names: Vec<String>,
    /// `advertised.listeners`, by listener name; listeners absent here advertise their own
    /// host and port.
    pub advertised_listeners: Vec<Listener>,
    pub log_dirs: Vec<PathBuf>,
    pub metadata_log_dir: PathBuf,
    /// `listener.security.protocol.map`, controller listeners absent from it as PLAINTEXT
    /// (Kafka's `effectiveListenerSecurityProtocolMap` in KRaft mode).
    pub security_protocols: BTreeMap<String, SecurityProtocol>,
    /// The TLS of the SSL listeners served and of the node's own TLS connections.
    pub tls: NodeTls,
    /// The SASL listeners' settings and the node's own SASL logins.
    pub sasl: SaslSettings,
}

/// Kafka's minimum `metadata.log.segment.bytes`: the largest batch Raft writes.
const METADATA_MIN_SEGMENT_BYTES: u64 = 8 * 1024 * 1024;

impl NodeConfig {
    /// Reads the file (if any) and applies the overrides on top.
    pub fn load(file: Option<&std::path::Path>, overrides: &[String]) -> Result<NodeConfig> {
        let mut props = match file {
            Some(path) => Properties::load(path)?,
            None => Properties::new(),
        };
        for entry in overrides {
            let (k, v) = entry
                .split_once('=')
                .ok_or_else(|| anyhow!("--override {entry:?}: expected key=value"))?;
            props.set(k.trim(), v.trim());
        }
        NodeConfig::from_properties(props)
    }

    pub fn from_properties(props: Properties) -> Result<NodeConfig> {
        let source = props.source();
        let bad = |key: &str, value: &str, why: &str| {
            anyhow!("invalid value {value:?} for {key} in {source}: {why}")
        };
        check_supported(&props)?;
        // Kafka 4.4's floor: a metadata segment holds the largest batch Raft writes (8 MiB);
        // a smaller one makes the log refuse a large proposal and the controller renounce,
        // again on every new leader. `internal.metadata.log.segment.bytes` (Kafka's
        // test-only override) bypasses it.
        if let Some(value) = props.get("metadata.log.segment.bytes") {
            match value.trim().parse::<u64>() {
                Ok(n) if n >= METADATA_MIN_SEGMENT_BYTES => {}
                _ => {
                    return Err(bad(
                        "metadata.log.segment.bytes",
                        value,
                        &format!(
                            "must be at least {METADATA_MIN_SEGMENT_BYTES} (a segment must hold \
                             the largest metadata batch)"
                        ),
                    ))
                }
            }
        }
        let roles_raw = props
            .get("process.roles")
            .ok_or_else(|| anyhow!("process.roles is not set in {source}"))?;
        let mut roles = Vec::new();
        for role in roles_raw
            .split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
        {
            let role = match role {
                "broker" => ProcessRole::Broker,
                "controller" => ProcessRole::Controller,
                other => {
                    return Err(bad(
                        "process.roles",
                        roles_raw,
                        &format!("unknown role {other:?} (expected broker and/or controller)"),
                    ))
                }
            };
            if !roles.contains(&role) {
                roles.push(role);
            }
        }
        if roles.is_empty() {
            return Err(bad("process.roles", roles_raw, "no role given"));
        }
        // `broker.id` (deprecated by KIP-1232) is another name for node.id, as Kafka's
        // `AbstractKafkaConfig.populateSynonyms`: used when node.id is not set, and refused
        // when both are set to different values (`KafkaConfig.validateValues`).
        let (node_id_key, node_id_raw) = match (props.get("node.id"), props.get("broker.id")) {
            (Some(id), _) => ("node.id", id),
            (None, Some(id)) => ("broker.id", id),
            (None, None) => return Err(anyhow!("node.id is not set in {source}")),
        };
        let node_id: i32 = node_id_raw
            .trim()
            .parse()
            .ok()
            .filter(|id: &i32| *id >= 0)
            .ok_or_else(|| bad(node_id_key, node_id_raw, "expected a non-negative integer"))?;
        if let Some(broker_id) = props.get("broker.id") {
            if broker_id.trim().parse::<i32>().ok() != Some(node_id) {
                return Err(anyhow!(
                    "`node.id` and `broker.id` must be set to the same value. `broker.id` is \
                     deprecated, please use `node.id` instead. (in {source})"
                ));
            }
        }
        let voters = match props.get("controller.quorum.voters") {
            Some(v) if !v.trim().is_empty() => {
                parse_voters(v).map_err(|e| anyhow!("{e} (in {source})"))?
            }
            // A dynamic quorum (KIP-853): the voter set is in the metadata log, the leader
            // found through the bootstrap servers.
            _ if props
                .get("controller.quorum.bootstrap.servers")
                .is_some_and(|v| !v.trim().is_empty()) =>
            {
                Default::default()
            }
            _ => bail!(
                "neither controller.quorum.voters nor controller.quorum.bootstrap.servers is set \
                 in {source}"
            ),
        };
        let bootstrap_servers = match props.get("controller.quorum.bootstrap.servers") {
            Some(v) => parse_bootstrap_servers(v, &voters)
                .map_err(|e| bad("controller.quorum.bootstrap.servers", v, &e.to_string()))?,
            None => Vec::new(),
        };
        let listeners = match props.get("listeners") {
            Some(v) => parse_listeners(v).map_err(|why| bad("listeners", v, &why))?,
            None => Vec::new(),
        };
        let advertised_listeners = match props.get("advertised.listeners") {
            Some(v) => parse_listeners(v).map_err(|why| bad("advertised.listeners", v, &why))?,
            None => Vec::new(),
        };
        let controller_listener_names: Vec<String> = props
            .get("controller.listener.names")
            .unwrap_or("")
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        let log_dirs: Vec<PathBuf> = props
            .get("log.dirs")
            .or_else(|| props.get("log.dir"))
            .unwrap_or(LOG_DIR_DEFAULT)
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .collect();
        if log_dirs.is_empty() {
            bail!("log.dirs in {source} names no directory");
        }
        let metadata_log_dir = props
            .get("metadata.log.dir")
            .map(PathBuf::from)
            .unwrap_or_else(|| log_dirs[0].clone());
        let security_protocols =
            security_protocol_map(&props, &listeners, &controller_listener_names)?;
        check_sasl_mechanisms(
            &props,
            &security_protocols,
            &listeners,
            &controller_listener_names,
        )?;
        check_controller_listener(
            &props,
            &roles,
            node_id,
            &voters,
            &listeners,
            &controller_listener_names,
        )?;
        let (sasl, tls) = security_settings(
            &props,
            &roles,
            &listeners,
            &controller_listener_names,
            &security_protocols,
        )?;
        Ok(NodeConfig {
            props,
            roles,
            node_id,
            voters,
            bootstrap_servers,
            listeners,
            controller_listener_names,
            advertised_listeners,
            log_dirs,
            metadata_log_dir,
            security_protocols,
            tls,
            sasl,
        })
    }

    pub fn is_controller(&self) -> bool {
        self.roles.contains(&ProcessRole::Controller)
    }

    /// The listener a controller serves on: the first of `listeners` named in
    /// `controller.listener.names`.
    pub fn controller_listener(&self) -> Option<&Listener> {
        controller_listener(&self.listeners, &self.controller_listener_names)
    }

    /// How `listener` is protected: its name, protocol and SASL settings (every listener
    /// has a protocol: loading checked it).
    pub fn listener_security(&self, listener: &Listener) -> ListenerSecurity {
        ListenerSecurity {
            listener_name: listener.name.clone(),
            protocol: self
                .security_protocols
                .get(&listener.name)
                .copied()
                .unwrap_or_default(),
            tls: self.tls.servers.get(&listener.name).cloned(),
            sasl: self.sasl.servers.get(&listener.name).cloned(),
        }
    }

    /// How this node's clients reach the listener named `listener_name` on other nodes
    /// (the controller listener, the inter-broker listener).
    pub fn client_security(&self, listener_name: &str) -> ClientSecurity {
        ClientSecurity {
            protocol: self
                .security_protocols
                .get(listener_name)
                .copied()
                .unwrap_or_default(),
            tls: self.tls.clients.get(listener_name).cloned(),
            sasl: self.sasl.clients.get(listener_name).cloned(),
        }
    }

    /// The listener brokers replicate and send markers over: `inter.broker.listener.name`,
    /// else the first client listener.
    pub fn inter_broker_listener_name(&self) -> Option<String> {
        inter_broker_listener_name(
            &self.props,
            &self.listeners,
            &self.controller_listener_names,
        )
        .map(str::to_string)
    }

    /// The client listeners (every listener not named in `controller.listener.names`) with
    /// what each advertises: its `advertised.listeners` entry, else its own host (or
    /// `localhost` for a wildcard bind) and port.
    pub fn broker_listeners(&self) -> Vec<(Listener, Listener)> {
        self.listeners
            .iter()
            .filter(|l| !self.controller_listener_names.contains(&l.name))
            .map(|l| {
                let advertised = self
                    .advertised_listeners
                    .iter()
                    .find(|a| a.name == l.name)
                    .cloned()
                    .unwrap_or_else(|| Listener {
                        name: l.name.clone(),
                        host: if l.host.is_empty() || l.host == "0.0.0.0" {
                            "localhost".to_string()
                        } else {
                            l.host.clone()
                        },
                        port: l.port,
                    });
                (l.clone(), advertised)
            })
            .collect()
    }

    /// The keys of the properties that neither Kafka 4.4 nor kraftd defines (a typo, a
    /// setting of another product): start-up names each in a warning, as Kafka logs the
    /// configurations "supplied but not used"; nothing else happens to them.
    pub fn unknown_keys(&self) -> Vec<&str> {
        self.props
            .iter()
            .map(|(key, _)| key)
            .filter(|key| !is_known_node_property(key))
            .collect()
    }

    /// A property Kafka defines, parsed as `T`, or `default`: the value is first checked by
    /// Kafka's definition ([`ConfigDef::validate`](kraftd_controller::control::config_defs::ConfigDef::validate):
    /// its type and validator, with Kafka's message), so a value Kafka would refuse at start
    /// is refused here too, naming the file.
    pub fn defined<T: FromStr>(&self, key: &str, default: T) -> Result<T> {
        let Some(value) = self.props.get(key) else {
            return Ok(default);
        };
        let def = any_broker_config_def(key)
            .ok_or_else(|| anyhow!("{key} has no definition among Kafka's broker configs"))?;
        def.validate(value)
            .map_err(|e| anyhow!("{e} (in {})", self.props.source()))?;
        let trimmed = value.trim();
        let parsed = if matches!(def.config_type, ConfigType::Boolean) {
            trimmed.to_ascii_lowercase().parse()
        } else {
            trimmed.parse()
        };
        parsed.map_err(|_| {
            anyhow!(
                "invalid value {value:?} for {key} in {}",
                self.props.source()
            )
        })
    }

    /// A numeric property, or its default; a value that does not parse is an error naming it.
    pub fn number<T: FromStr>(&self, key: &str, default: T) -> Result<T> {
        match self.props.get(key) {
            None => Ok(default),
            Some(v) => v.trim().parse().map_err(|_| {
                anyhow!(
                    "invalid value {v:?} for {key} in {}: expected a number",
                    self.props.source()
                )
            }),
        }
    }

    /// A boolean property, or its default.
    pub fn boolean(&self, key: &str, default: bool) -> Result<bool> {
        match self.props.get(key).map(str::trim) {
            None => Ok(default),
            Some("true") => Ok(true),
            Some("false") => Ok(false),
            Some(v) => bail!(
                "invalid value {v:?} for {key} in {}: expected true or false",
                self.props.source()
            ),
        }
    }
}

/// The listener a controller serves on: the first of `listeners` named in
/// `controller_listener_names`.
fn controller_listener<'a>(
    listeners: &'a [Listener],
    controller_listener_names: &[String],
) -> Option<&'a Listener> {
    listeners
        .iter()
        .find(|l| controller_listener_names.contains(&l.name))
}

/// `inter.broker.listener.name`, else the first client listener (one not named in
/// `controller.listener.names`).
fn inter_broker_listener_name<'a>(
    props: &'a Properties,
    listeners: &'a [Listener],
    controller_listener_names: &[String],
) -> Option<&'a str> {
    props.get("inter.broker.listener.name").or_else(|| {
        listeners
            .iter()
            .find(|l| !controller_listener_names.contains(&l.name))
            .map(|l| l.name.as_str())
    })
}

/// The listeners fit the roles: `controller.listener.names` is set, a broker has a client
/// listener, a controller a controller listener and (with static voters) a place among
/// `controller.quorum.voters`.
fn check_controller_listener(
    props: &Properties,
    roles: &[ProcessRole],
    node_id: i32,
    voters: &BTreeMap<i32, VoterEndpoint>,
    listeners: &[Listener],
    controller_listener_names: &[String],
) -> Result<()> {
    let source = props.source();
    if controller_listener_names.is_empty() {
        bail!("controller.listener.names is not set in {source}");
    }
    let has_client_listener = listeners
        .iter()
        .any(|l| !controller_listener_names.contains(&l.name));
    if roles.contains(&ProcessRole::Broker) && !has_client_listener {
        bail!(
            "listeners in {source} has no client listener (every one is named in \
             controller.listener.names)"
        );
    }
    if roles.contains(&ProcessRole::Controller) {
        if controller_listener(listeners, controller_listener_names).is_none() {
            bail!(
                "listeners in {source} has no listener named in controller.listener.names ({})",
                controller_listener_names.join(",")
            );
        }
        // A dynamic quorum's controller (no static voters) starts as an observer.
        if !voters.is_empty() && !voters.contains_key(&node_id) {
            bail!(
                "node.id {node_id} is a controller but not one of controller.quorum.voters in {source}"
            );
        }
    }
    Ok(())
}

/// The SASL and TLS settings, read from the properties before the [`NodeConfig`] is built:
/// those of the listeners this node serves and of its own connections — the controller
/// listener, and on a broker the inter-broker listener.
fn security_settings(
    props: &Properties,
    roles: &[ProcessRole],
    listeners: &[Listener],
    controller_listener_names: &[String],
    protocols: &BTreeMap<String, SecurityProtocol>,
) -> Result<(SaslSettings, NodeTls)> {
    let protocol = |name: &str| protocols.get(name).copied().unwrap_or_default();
    let is_broker = roles.contains(&ProcessRole::Broker);
    let is_controller = roles.contains(&ProcessRole::Controller);
    let controller_login = controller_listener_names.first();
    let inter_broker_login = is_broker
        .then(|| inter_broker_listener_name(props, listeners, controller_listener_names))
        .flatten();

    let sasl_served: Vec<_> = listeners
        .iter()
        .map(|l| (l.name.clone(), protocol(&l.name)))
        .collect();
    let mut logins = Vec::new();
    if let Some(name) = controller_login {
        logins.push((
            name.clone(),
            protocol(name),
            "sasl.mechanism.controller.protocol",
        ));
    }
    if let Some(name) = inter_broker_login {
        logins.push((
            name.to_string(),
            protocol(name),
            "sasl.mechanism.inter.broker.protocol",
        ));
    }
    let sasl = SaslSettings::load(props, &sasl_served, &logins)?;

    // TLS is read only for the listeners this node's roles serve.
    let tls_served: Vec<_> = listeners
        .iter()
        .filter(|l| {
            if controller_listener_names.contains(&l.name) {
                is_controller
            } else {
                is_broker
            }
        })
        .map(|l| (l.name.clone(), protocol(&l.name)))
        .collect();
    let clients: Vec<_> = controller_login
        .map(String::as_str)
        .into_iter()
        .chain(inter_broker_login)
        .map(|name| (name.to_string(), protocol(name)))
        .collect();
    let tls = NodeTls::load(props, &tls_served, &clients)?;
    Ok((sasl, tls))
}

/// Refuses a broker config kraftd does not support (`config_defs::CONFIG_SUPPORT`) set to
/// anything but Kafka's default: one line naming the key, the value (hidden for a secret)
/// and the file. Keys kraftd does not know as broker configs are left alone.
fn check_supported(props: &Properties) -> Result<()> {
    for (key, value) in props.iter() {
        if let Err(ConfigValueError::Unsupported {
            value,
            why,
            default,
            ..
        }) = check_static_support(key, value)
        {
            let only = match default {
                Some(d) => format!("only Kafka's default {d:?} is accepted"),
                None => "it must not be set".to_string(),
            };
            bail!(
                "unsupported value {value:?} for {key} in {}: kraftd does not support {key} \
                 ({why}); {only}",
                props.source()
            );
        }
    }
    Ok(())
}

/// Refuses a SASL mechanism kraftd does not serve (GSSAPI, OAUTHBEARER, ...) wherever this
/// node would enable it: on a SASL listener, for inter-broker traffic over a SASL
/// inter-broker listener, for controller traffic over a SASL controller listener; one line
/// naming the key, the value and the file.
fn check_sasl_mechanisms(
    props: &Properties,
    protocols: &BTreeMap<String, SecurityProtocol>,
    listeners: &[Listener],
    controller_listener_names: &[String],
) -> Result<()> {
    let is_sasl = |name: &str| protocols.get(name).is_some_and(|p| p.uses_sasl());
    let sasl_listeners: Vec<&str> = listeners
        .iter()
        .map(|l| l.name.as_str())
        .filter(|name| is_sasl(name))
        .collect();
    let inter_broker = inter_broker_listener_name(props, listeners, controller_listener_names);
    let sasl = SaslListeners {
        sasl_listeners: &sasl_listeners,
        inter_broker_sasl: inter_broker.is_some_and(is_sasl),
        controller_sasl: controller_listener_names
            .first()
            .is_some_and(|n| is_sasl(n)),
    };
    check_static_sasl_mechanisms(|key| props.get(key), &sasl).map_err(|e| match &e {
        ConfigValueError::UnsupportedFeature { key, value, .. } => {
            anyhow!(
                "unsupported value {value:?} for {key} in {}: {e}",
                props.source()
            )
        }
        _ => anyhow!("{e} (in {})", props.source()),
    })
}

/// Kafka's default `listener.security.protocol.map`: each protocol as a listener name.
const DEFAULT_SECURITY_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// `listener.security.protocol.map` (`NAME:PROTOCOL,...`), checked against `listeners`:
/// every listener needs a protocol, except that a controller listener absent from a map
/// the file does not set is PLAINTEXT, as Kafka has it in KRaft mode.
fn security_protocol_map(
    props: &Properties,
    listeners: &[Listener],
    controller_listener_names: &[String],
) -> Result<BTreeMap<String, SecurityProtocol>> {
    const KEY: &str = "listener.security.protocol.map";
    let source = props.source();
    let explicit = props.get(KEY);
    let raw = explicit.unwrap_or(DEFAULT_SECURITY_PROTOCOL_MAP);
    let mut map = BTreeMap::new();
    for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, protocol) = entry.split_once(':').ok_or_else(|| {
            anyhow!(
                "invalid value {raw:?} for {KEY} in {source}: entry {entry:?} is not NAME:PROTOCOL"
            )
        })?;
        let protocol = SecurityProtocol::from_name(protocol).ok_or_else(|| {
            anyhow!(
                "invalid value {raw:?} for {KEY} in {source}: unknown security protocol {protocol:?} \
                 (expected PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)"
            )
        })?;
        if map.insert(name.trim().to_string(), protocol).is_some() {
            bail!("invalid value {raw:?} for {KEY} in {source}: listener {name:?} appears twice");
        }
    }
    if explicit.is_none() {
        for name in controller_listener_names {
            map.entry(name.clone())
                .or_insert(SecurityProtocol::Plaintext);
        }
    }
    for l in listeners {
        if !map.contains_key(&l.name) {
            bail!(
                "listener {} in {source} has no security protocol: add {}:<protocol> to {KEY}",
                l.name,
                l.name
            );
        }
    }
    Ok(map)
}

/// `NAME://host:port,...`; each name's protocol comes from `listener.security.protocol.map`.
pub fn parse_listeners(value: &str) -> std::result::Result<Vec<Listener>, String> {
    let mut out: Vec<Listener> = Vec::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, rest) = entry
            .split_once("://")
            .ok_or_else(|| format!("entry {entry:?}: expected NAME://host:port"))?;
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| format!("entry {entry:?}: expected NAME://host:port"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("entry {entry:?}: the port is not a number in 0..65535"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if out.iter().any(|l| l.name == name) {
            return Err(format!("listener name {name:?} appears twice"));
        }
        out.push(Listener {
            name: name.to_string(),
            host,
            port,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(text: &str) -> Properties {
        Properties::parse(text)
    }

    #[test]
    fn a_controller_config_parses() {
        let c = NodeConfig::from_properties(props(
            "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n\
             listeners=CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\n\
             log.dirs=/a,/b\n",
        ))
        .unwrap();
        assert!(c.is_controller());
        assert_eq!(c.controller_listener().unwrap().port, 9093);
        assert_eq!(c.metadata_log_dir, PathBuf::from("/a"));
        assert_eq!(c.log_dirs.len(), 2);
    }

    /// `broker.id` is node.id's deprecated other name, as Kafka's `populateSynonyms`: used
    /// alone, and refused when both differ (`KafkaConfig.validateValues`' message).
    #[test]
    fn broker_id_is_another_name_for_node_id() {
        const REST: &str = "process.roles=controller\ncontroller.quorum.voters=1@127.0.0.1:9093\n\
                            listeners=CONTROLLER://127.0.0.1:9093\n\
                            controller.listener.names=CONTROLLER\nlog.dirs=/a\n";
        let alone = NodeConfig::from_properties(props(&format!("broker.id=1\n{REST}"))).unwrap();
        assert_eq!(alone.node_id, 1);
        let both = format!("node.id=1\nbroker.id=1\n{REST}");
        assert_eq!(
            NodeConfig::from_properties(props(&both)).unwrap().node_id,
            1
        );
        let e = NodeConfig::from_properties(props(&format!("node.id=1\nbroker.id=2\n{REST}")))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("`node.id` and `broker.id` must be set to the same value"),
            "{e}"
        );
    }

    /// A key neither Kafka 4.4 nor kraftd defines is reported (start-up warns about it);
    /// Kafka's own keys, kraftd's, listener-prefixed ones and `metrics.port` are not.
    #[test]
    fn unknown_keys_are_the_ones_neither_kafka_nor_kraftd_defines() {
        let c = NodeConfig::from_properties(props(
            "process.roles=controller\nnode.id=1\ncontroller.quorum.voters=1@127.0.0.1:9093\n\
             listeners=CONTROLLER://127.0.0.1:9093\ncontroller.listener.names=CONTROLLER\n\
             log.dirs=/a\nnum.io.threads=8\nmetrics.port=9100\nsuper.users=User:admin\n\
             listener.name.controller.ssl.keystore.type=PKCS12\n\
             auto.leader.rebalance.enabled=true\nconfluent.license=x\n",
        ))
        .unwrap();
        assert_eq!(
            c.unknown_keys(),
            vec!["auto.leader.rebalance.enabled", "confluent.license"]
        );
    }

    #[test]
    fn bad_values_name_the_key_and_value() {
        let e = NodeConfig::from_properties(props(
            "process.roles=controller\nnode.id=x\ncontroller.quorum.voters=1@h:1\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("node.id") && e.contains("\"x\""), "{e}");
        let e = NodeConfig::from_properties(props(
            "process.roles=router\nnode.id=1\ncontroller.quorum.voters=1@h:1\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("process.roles") && e.contains("router"), "{e}");
        let e = NodeConfig::from_properties(props(
            "process.roles=controller\nnode.id=2\ncontroller.quorum.voters=1@h:1\n\
             listeners=CONTROLLER://h:1\ncontroller.listener.names=CONTROLLER\n",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("not one of controller.quorum.voters"), "{e}");
    }

    const BROKER: &str = "process.roles=broker\nnode.id=4\nlisteners=PLAINTEXT://h:9092\n\
                          controller.listener.names=CONTROLLER\n\
                          controller.quorum.voters=1@c1:9093,2@c2:9093,3@c3:9093\n";

    #[test]
    fn bootstrap_servers_map_to_voters_or_take_negative_ids() {
        let c = NodeConfig::from_properties(props(&format!(
            "{BROKER}controller.quorum.bootstrap.servers=c2:9093, lb:9093,C1:9093,lb:9094\n"
        )))
        .unwrap();
        let b: Vec<(i32, String)> = c
            .bootstrap_servers
            .iter()
            .map(|s| (s.id, s.address()))
            .collect();
        assert_eq!(
            b,
            vec![
                (2, "c2:9093".to_string()),
                (-2, "lb:9093".to_string()),
                (1, "C1:9093".to_string()),
                (-3, "lb:9094".to_string()),
            ]
        );
        let c = NodeConfig::from_properties(props(BROKER)).unwrap();
        assert!(
            c.bootstrap_servers.is_empty(),
            "absent: the core asks the voters"
        );
    }

    #[test]
    fn a_bad_bootstrap_server_is_one_line_naming_key_value_and_file() {
        for (value, entry) in [
            ("c1:9093,c2", "c2"),
            ("c1:9093,c2:0", "c2:0"),
            ("c1:9093,c2:x", "c2:x"),
            ("lb:1,LB:1", "LB:1"),
            ("1@c1:9093", "1@c1:9093"),
            ("::1:9093", "::1:9093"),
        ] {
            let text = format!("{BROKER}controller.quorum.bootstrap.servers={value}\n");
            let e = NodeConfig::from_properties(props(&text))
                .unwrap_err()
                .to_string();
            assert!(!e.contains('\n'), "{e}");
            assert!(e.contains("controller.quorum.bootstrap.servers"), "{e}");
            assert!(e.contains(&format!("{value:?}")), "{e}");
            assert!(e.contains(&format!("entry {entry:?}")), "{e}");
            assert!(e.contains("the command line"), "{e}");
        }
    }

    #[test]
    fn bootstrap_servers_alone_make_a_dynamic_quorum() {
        let c = NodeConfig::from_properties(props(
            "process.roles=broker\nnode.id=4\ncontroller.quorum.bootstrap.servers=c1:9093\n\
             controller.listener.names=CONTROLLER\nlisteners=PLAINTEXT://:9092\n",
        ))
        .unwrap();
        assert!(c.voters.is_empty());
        assert_eq!(c.bootstrap_servers[0].id, -2);
        assert_eq!(c.bootstrap_servers[0].address(), "c1:9093");
        let e = NodeConfig::from_properties(props("process.roles=broker\nnode.id=4\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("controller.quorum.voters") && e.contains("bootstrap.servers"),
            "{e}"
        );
    }

    #[test]
    fn listeners_parse_like_kafka() {
        let l = parse_listeners("PLAINTEXT://:9092, CONTROLLER://[::1]:9093").unwrap();
        assert_eq!(l[0].host, "");
        assert_eq!(l[0].bind_address(), "0.0.0.0:9092");
        assert_eq!(l[1].host, "::1");
        assert!(parse_listeners("PLAINTEXT://h").is_err());
        assert!(parse_listeners("A://h:1,A://h:2").is_err());
    }

    #[test]
    fn an_unsupported_config_in_the_file_is_one_line_naming_key_value_and_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server.properties");
        for (line, key, shown) in [
            (
                "remote.log.storage.system.enable=true",
                "remote.log.storage.system.enable",
                "\"true\"",
            ),
            (
                "metric.reporters=com.example.Reporter",
                "metric.reporters",
                "\"com.example.Reporter\"",
            ),
            (
                "principal.builder.class=com.example.Builder",
                "principal.builder.class",
                "\"com.example.Builder\"",
            ),
            (
                "listener.name.sasl_ssl.ssl.engine.factory.class=com.example.Engine",
                "listener.name.sasl_ssl.ssl.engine.factory.class",
                "\"com.example.Engine\"",
            ),
        ] {
            std::fs::write(&path, format!("{BROKER}{line}\n")).unwrap();
            let e = NodeConfig::load(Some(&path), &[]).unwrap_err().to_string();
            assert!(!e.contains('\n'), "{e}");
            assert!(e.contains(key) && e.contains(shown), "{e}");
            assert!(e.contains(&path.display().to_string()), "{e}");
            assert!(e.contains("kraftd does not support"), "{e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
        // Kafka's defaults, honoured keys and keys kraftd does not know all start.
        std::fs::write(
            &path,
            format!(
                "{BROKER}compression.type=producer\nmessage.max.bytes=2000000\n\
                 num.io.threads=16\noffsets.topic.replication.factor=1\n"
            ),
        )
        .unwrap();
        NodeConfig::load(Some(&path), &[]).unwrap();
        // An override is checked too.
        let e = NodeConfig::load(
            Some(&path),
            &["metric.reporters=com.example.Reporter".to_string()],
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("metric.reporters") && e.contains("\"com.example.Reporter\""),
            "{e}"
        );
    }

    #[test]
    fn an_unserved_sasl_mechanism_on_a_sasl_listener_is_one_line_naming_key_value_and_file() {
        let listeners = parse_listeners("EXTERNAL://h:9092,CONTROLLER://h:9093").unwrap();
        let controllers = vec!["CONTROLLER".to_string()];
        let protocols: BTreeMap<String, SecurityProtocol> = [
            ("EXTERNAL".to_string(), SecurityProtocol::SaslPlaintext),
            ("CONTROLLER".to_string(), SecurityProtocol::Plaintext),
        ]
        .into();
        let check = |text: &str| {
            check_sasl_mechanisms(&props(text), &protocols, &listeners, &controllers)
                .map_err(|e| e.to_string())
        };
        let served = "sasl.enabled.mechanisms=SCRAM-SHA-512
                      sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
";
        check(served).unwrap();
        // The controller listener is PLAINTEXT: its mechanism (default GSSAPI) is unused.
        check(&format!(
            "{served}sasl.mechanism.controller.protocol=GSSAPI\n"
        ))
        .unwrap();
        for (text, key, value) in [
            ("", "sasl.enabled.mechanisms", "GSSAPI"),
            (
                "sasl.enabled.mechanisms=PLAIN,OAUTHBEARER\n",
                "sasl.enabled.mechanisms",
                "PLAIN,OAUTHBEARER",
            ),
            (
                "sasl.enabled.mechanisms=PLAIN\n",
                "sasl.mechanism.inter.broker.protocol",
                "GSSAPI",
            ),
            (
                "sasl.enabled.mechanisms=PLAIN\nlistener.name.external.sasl.enabled.mechanisms=GSSAPI\n",
                "listener.name.external.sasl.enabled.mechanisms",
                "GSSAPI",
            ),
        ] {
            let e = check(text).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
            assert!(
                e.contains(&format!("for {key} in the command line"))
                    && e.contains(&format!("{value:?}"))
                    && e.contains("kraftd does not support the SASL mechanism"),
                "{e}"
            );
        }
        // With no SASL listener, Kafka's default GSSAPI is never used.
        let plaintext: BTreeMap<String, SecurityProtocol> = [
            ("EXTERNAL".to_string(), SecurityProtocol::Plaintext),
            ("CONTROLLER".to_string(), SecurityProtocol::Plaintext),
        ]
        .into();
        check_sasl_mechanisms(&props(""), &plaintext, &listeners, &controllers).unwrap();
    }
}
