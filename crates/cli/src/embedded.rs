//! The embedded default: `kraftd` with no arguments (or `kraftd combined` without a config)
//! runs a single-node combined cluster a client can reach at once: brokers on
//! 127.0.0.1:9092, the controller on 127.0.0.1:9093, `/metrics` and the web console on
//! 127.0.0.1:9094, data in
//! `./kraftd-data` (formatted with a fresh cluster id on first start, reused after).

use std::path::Path;

use anyhow::Result;

use crate::config::NodeConfig;
use crate::format;
use crate::properties::Properties;

/// Where the embedded default keeps its data.
pub const DATA_DIR: &str = "kraftd-data";

/// The embedded default's properties, by Kafka's names.
pub fn properties() -> Properties {
    let mut p = Properties::new();
    for (k, v) in [
        ("process.roles", "broker,controller"),
        ("node.id", "1"),
        ("controller.quorum.voters", "1@127.0.0.1:9093"),
        (
            "listeners",
            "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        ),
        ("controller.listener.names", "CONTROLLER"),
        ("log.dirs", DATA_DIR),
        ("num.partitions", "1"),
        ("default.replication.factor", "1"),
        ("metrics.port", "9094"),
        // The web console on the metrics listener (http://127.0.0.1:9094/).
        ("console.enable", "true"),
    ] {
        p.set(k, v);
    }
    p
}

/// The node config, with `advertised.listeners` written out when neither the defaults nor
/// an override set it: the embedded default stands in for a config file, so DescribeConfigs
/// reports the address clients are really given, as STATIC_BROKER_CONFIG, rather than
/// Kafka's null default. A listener on port 0 gets its port only when bound, so then the
/// setting stays unset.
fn with_advertised_listeners(mut props: Properties) -> Result<NodeConfig> {
    let config = NodeConfig::from_properties(props.clone())?;
    if props.get("advertised.listeners").is_some() {
        return Ok(config);
    }
    let advertised = config.broker_listeners();
    if advertised.is_empty() || advertised.iter().any(|(_, a)| a.port == 0) {
        return Ok(config);
    }
    let value = advertised
        .iter()
        .map(|(_, a)| format!("{}://{}:{}", a.name, a.host, a.port))
        .collect::<Vec<_>>()
        .join(",");
    props.set("advertised.listeners", value);
    NodeConfig::from_properties(props)
}

pub fn run(overrides: &[String]) -> Result<()> {
    crate::init_tracing();
    let mut props = properties();
    for entry in overrides {
        let (k, v) = entry
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--override {entry:?}: expected key=value"))?;
        props.set(k.trim(), v.trim());
    }
    let config = with_advertised_listeners(props)?;
    if format::MetaProperties::read(Path::new(&config.metadata_log_dir))?.is_none() {
        let cluster_id = format::random_uuid()?;
        format::format(
            &config,
            &cluster_id,
            false,
            &[],
            &format::QuorumFlag::None,
            &format::FeatureArgs::default(),
        )?;
        eprintln!(
            "Formatted {} for a new single-node cluster {cluster_id}",
            config.metadata_log_dir.display()
        );
    }
    crate::node::run(config, "the embedded default", |config| {
        for (_, advertised) in config.broker_listeners() {
            println!(
                "kraftd is running: bootstrap servers {}:{} (Ctrl-C stops it)",
                advertised.host, advertised.port
            );
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advertised_listeners_follow_the_listeners_unless_set() {
        let config = with_advertised_listeners(properties()).unwrap();
        assert_eq!(
            config.props.get("advertised.listeners"),
            Some("PLAINTEXT://127.0.0.1:9092")
        );
        let mut props = properties();
        props.set(
            "listeners",
            "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:9093",
        );
        let config = with_advertised_listeners(props).unwrap();
        assert_eq!(
            config.props.get("advertised.listeners"),
            Some("PLAINTEXT://127.0.0.1:19092")
        );
        let mut props = properties();
        props.set("advertised.listeners", "PLAINTEXT://example:9092");
        let config = with_advertised_listeners(props).unwrap();
        assert_eq!(
            config.props.get("advertised.listeners"),
            Some("PLAINTEXT://example:9092")
        );
        let mut props = properties();
        props.set(
            "listeners",
            "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:9093",
        );
        let config = with_advertised_listeners(props).unwrap();
        assert_eq!(config.props.get("advertised.listeners"), None);
    }
}
