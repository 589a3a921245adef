//! Kafka's connection limits read from a node's configs into the transport's
//! [`ConnectionQuotaConfig`], at start from the properties file and live through
//! [`ConnectionQuotasReconfigurer`], Kafka's `DynamicListenerConfig` and socket-server
//! `reconfigure` for `max.connections`, `max.connections.per.ip`,
//! `max.connections.per.ip.overrides`, `max.connection.creation.rate` and their
//! `listener.name.<l>.` forms: this node's dynamic broker configs (its own over the cluster
//! default) layered over the file.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::Arc;

use kraftd_controller::control::config_defs::any_broker_config_def;
use kraftd_controller::publisher::Reconfigurable;
use kraftd_net::connection_quotas::{
    parse_max_connections_per_ip_overrides, ConnectionQuotaConfig, ConnectionQuotas,
    ListenerQuotaConfig, UNLIMITED,
};

use crate::properties::Properties;

const MAX_CONNECTIONS: &str = "max.connections";
const MAX_CONNECTION_CREATION_RATE: &str = "max.connection.creation.rate";
const MAX_CONNECTIONS_PER_IP: &str = "max.connections.per.ip";
const MAX_CONNECTIONS_PER_IP_OVERRIDES: &str = "max.connections.per.ip.overrides";

/// The limits `props` set for a role serving `listeners`. `dynamic`: checked as Kafka's
/// `ListenerConnectionQuota.validateReconfiguration` checks a change (a listener's cap or
/// rate must be positive). Messages are Kafka's, prefixed by nothing: the caller names the
/// source.
pub fn connection_quota_config(
    props: &Properties,
    listeners: &[String],
    dynamic: bool,
) -> Result<ConnectionQuotaConfig, String> {
    let int = |key: &str| -> Result<Option<i32>, String> {
        let Some(value) = props.get(key) else {
            return Ok(None);
        };
        if let Some(def) = any_broker_config_def(base_name(key)) {
            def.validate(value).map_err(|e| e.about(key).to_string())?;
        }
        value.trim().parse().map(Some).map_err(|_| {
            format!("Invalid value {value} for configuration {key}: Not a number of type INT")
        })
    };
    let per_ip = int(MAX_CONNECTIONS_PER_IP)?.unwrap_or(UNLIMITED);
    let overrides = props.get(MAX_CONNECTIONS_PER_IP_OVERRIDES).unwrap_or("");
    let parsed = parse_max_connections_per_ip_overrides(overrides)?;
    if per_ip == 0 && parsed.is_empty() {
        return Err(format!(
            "requirement failed: {MAX_CONNECTIONS_PER_IP} can be set to zero only if \
             {MAX_CONNECTIONS_PER_IP_OVERRIDES} property is set."
        ));
    }
    let mut resolved = HashMap::new();
    for (host, count) in parsed {
        resolved.insert(resolve(&host)?, count);
    }
    let mut own = BTreeMap::new();
    for listener in listeners {
        let prefix = format!("listener.name.{}.", listener.to_lowercase());
        let max = int(&format!("{prefix}{MAX_CONNECTIONS}"))?;
        let rate = int(&format!("{prefix}{MAX_CONNECTION_CREATION_RATE}"))?;
        if max.is_none() && rate.is_none() {
            continue;
        }
        let quota = ListenerQuotaConfig {
            max_connections: max.unwrap_or(UNLIMITED),
            max_connection_creation_rate: rate.unwrap_or(UNLIMITED),
        };
        if dynamic {
            if quota.max_connections <= 0 {
                return Err(format!(
                    "Invalid {MAX_CONNECTIONS} {}",
                    quota.max_connections
                ));
            }
            if quota.max_connection_creation_rate <= 0 {
                return Err(format!(
                    "Invalid {MAX_CONNECTION_CREATION_RATE} {}",
                    quota.max_connection_creation_rate
                ));
            }
        }
        own.insert(listener.clone(), quota);
    }
    Ok(ConnectionQuotaConfig {
        max_connections_per_ip: per_ip,
        max_connections_per_ip_overrides: resolved,
        max_connections: int(MAX_CONNECTIONS)?.unwrap_or(UNLIMITED),
        max_connection_creation_rate: int(MAX_CONNECTION_CREATION_RATE)?.unwrap_or(UNLIMITED),
        listeners: own,
    })
}

/// The config a possibly listener-prefixed key sets.
fn base_name(key: &str) -> &str {
    key.strip_prefix("listener.name.")
        .and_then(|rest| rest.split_once('.'))
        .map_or(key, |(_, base)| base)
}

/// An override's host as Kafka's `InetAddress.getByName`: an address as written, else the
/// first address the name resolves to.
fn resolve(host: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ip);
    }
    (host, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .map(|a| a.ip())
        .ok_or_else(|| format!("{host}: Name or service not known"))
}

/// A role's [`ConnectionQuotas`] as a Kafka `Reconfigurable`: the file's limits with this
/// node's dynamic configs over them.
#[derive(Debug)]
pub struct ConnectionQuotasReconfigurer {
    props: Properties,
    listeners: Vec<String>,
    quotas: Arc<ConnectionQuotas>,
}

impl ConnectionQuotasReconfigurer {
    pub fn new(props: &Properties, listeners: Vec<String>, quotas: Arc<ConnectionQuotas>) -> Self {
        ConnectionQuotasReconfigurer {
            props: props.clone(),
            listeners,
            quotas,
        }
    }

    fn config(&self, configs: &BTreeMap<String, String>) -> Result<ConnectionQuotaConfig, String> {
        let relevant: BTreeMap<String, String> = configs
            .iter()
            .filter(|(k, _)| {
                matches!(
                    base_name(k),
                    MAX_CONNECTIONS
                        | MAX_CONNECTION_CREATION_RATE
                        | MAX_CONNECTIONS_PER_IP
                        | MAX_CONNECTIONS_PER_IP_OVERRIDES
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let layered = self
            .props
            .layered(&relevant, "the dynamic broker configs".into());
        connection_quota_config(&layered, &self.listeners, !relevant.is_empty())
    }
}

impl Reconfigurable for ConnectionQuotasReconfigurer {
    fn validate_reconfiguration(&self, configs: &BTreeMap<String, String>) -> Result<(), String> {
        self.config(configs).map(|_| ())
    }

    fn reconfigure(&self, configs: &BTreeMap<String, String>) {
        match self.config(configs) {
            Ok(config) => self.quotas.reconfigure(config),
            Err(e) => tracing::error!("connection quotas could not be reconfigured: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(lines: &str) -> Properties {
        Properties::parse(lines)
    }

    #[test]
    fn the_file_and_the_dynamic_configs_give_kafkas_limits() {
        let p = props(
            "max.connections.per.ip=2\nmax.connections.per.ip.overrides=127.0.0.2:5\n\
             listener.name.external.max.connections=7\nmax.connection.creation.rate=3\n",
        );
        let c =
            connection_quota_config(&p, &["EXTERNAL".into(), "INTERNAL".into()], false).unwrap();
        assert_eq!(c.max_connections_per_ip, 2);
        assert_eq!(
            c.max_connections_per_ip_overrides,
            HashMap::from([("127.0.0.2".parse().unwrap(), 5)])
        );
        assert_eq!(c.max_connections, UNLIMITED);
        assert_eq!(c.max_connection_creation_rate, 3);
        assert_eq!(c.listeners["EXTERNAL"].max_connections, 7);
        assert!(!c.listeners.contains_key("INTERNAL"));

        let quotas = ConnectionQuotas::new(
            ConnectionQuotaConfig::default(),
            kraftd_net::connection_quotas::QUOTA_WINDOW_DEFAULT,
        );
        let r = ConnectionQuotasReconfigurer::new(&p, vec!["EXTERNAL".into()], quotas);
        let dynamic = |k: &str, v: &str| BTreeMap::from([(k.to_string(), v.to_string())]);
        assert_eq!(
            r.validate_reconfiguration(&dynamic("max.connections.per.ip.overrides", "a b:1")),
            Err("max.connections.per.ip.overrides contains invalid addresses : a b".into())
        );
        assert_eq!(
            r.validate_reconfiguration(&dynamic("listener.name.external.max.connections", "0")),
            Err("Invalid max.connections 0".into())
        );
        assert_eq!(
            r.validate_reconfiguration(&BTreeMap::from([
                ("max.connections.per.ip".to_string(), "0".to_string()),
                (
                    "max.connections.per.ip.overrides".to_string(),
                    String::new()
                ),
            ])),
            Err(
                "requirement failed: max.connections.per.ip can be set to zero only if \
                 max.connections.per.ip.overrides property is set."
                    .into()
            )
        );
        assert!(r
            .validate_reconfiguration(&dynamic("max.connections.per.ip", "10"))
            .is_ok());
        assert!(r
            .validate_reconfiguration(&dynamic("max.connections", "-1"))
            .unwrap_err()
            .contains("max.connections"));
    }
}
