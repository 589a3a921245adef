//! The benchmarked cluster as child processes of this one, kraftd's or Kafka's alike: waiting
//! for its brokers, their bootstrap list and CPU, and stopping it (on a panic too). Starting
//! each system's nodes is in `kraftd.rs` and `kafka.rs`. A broker config may name `{port}`
//! (the broker's listener port) and any of [`EXTRA_PORTS`] (`{ssl_port}`,
//! `{sasl_ssl_port}`: each a further free port, for another listener), substituted per
//! broker by [`broker_lines`].

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::machine::process_ticks;
use crate::cluster::alive_brokers;

/// The placeholders of further listeners' ports a broker config may name.
pub(super) const EXTRA_PORTS: [&str; 2] = ["ssl_port", "sasl_ssl_port"];

pub(super) struct BenchNode {
    pub(super) id: u32,
    pub(super) broker_port: Option<u16>,
    /// A broker's further listeners' ports, by the placeholder its config named
    /// (`ssl_port`, `sasl_ssl_port`).
    pub(super) extra_ports: Vec<(&'static str, u16)>,
    pub(super) child: Option<Child>,
    /// A controller's listener port (kraftd's controllers and Kafka's 3-controller quorum).
    pub(super) controller_port: Option<u16>,
    /// Starts the node again with its config and data (after a kill: `bench failover`).
    pub(super) respawn: Option<Respawn>,
}

/// Starts a stopped node again on its own config, data and log file.
pub(super) type Respawn = Box<dyn Fn() -> Result<Child>>;

pub(super) struct Cluster {
    pub(super) nodes: Vec<BenchNode>,
}

impl Cluster {
    /// Waits until every broker is in the first broker's Metadata (registered and unfenced).
    pub(super) fn wait_brokers(&mut self, timeout: Duration) -> Result<()> {
        let ports: Vec<u16> = self.nodes.iter().filter_map(|n| n.broker_port).collect();
        let deadline = Instant::now() + timeout;
        loop {
            let seen = alive_brokers(ports[0]).unwrap_or_default();
            if seen.len() == ports.len() {
                println!("{} brokers registered and unfenced", seen.len());
                return Ok(());
            }
            for node in &mut self.nodes {
                if let Some(status) = node
                    .child
                    .as_mut()
                    .and_then(|c| c.try_wait().ok().flatten())
                {
                    bail!("node {} exited ({status})", node.id);
                }
            }
            if Instant::now() >= deadline {
                bail!("only brokers {seen:?} unfenced after {timeout:?}");
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    pub(super) fn bootstrap(&self) -> String {
        self.nodes
            .iter()
            .filter_map(|n| Some(format!("127.0.0.1:{}", n.broker_port?)))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The brokers' listeners on the port `placeholder` (as `ssl_port`), comma-separated.
    pub(super) fn bootstrap_of(&self, placeholder: &str) -> String {
        self.nodes
            .iter()
            .flat_map(|n| &n.extra_ports)
            .filter(|(name, _)| *name == placeholder)
            .map(|(_, port)| format!("127.0.0.1:{port}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// CPU ticks the brokers have used so far.
    pub(super) fn cpu_ticks(&self) -> u64 {
        self.nodes
            .iter()
            .filter(|n| n.broker_port.is_some())
            .filter_map(|n| n.child.as_ref())
            .map(|c| process_ticks(c.id()))
            .sum()
    }

    /// CPU ticks every node, controllers included, has used so far.
    pub(super) fn all_cpu_ticks(&self) -> u64 {
        self.pids().map(process_ticks).sum()
    }

    /// The brokers' process ids.
    pub(super) fn broker_pids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter(|n| n.broker_port.is_some())
            .filter_map(|n| Some(n.child.as_ref()?.id()))
            .collect()
    }

    /// Every running node's process id.
    fn pids(&self) -> impl Iterator<Item = u32> + '_ {
        self.nodes
            .iter()
            .filter_map(|n| Some(n.child.as_ref()?.id()))
    }

    /// SIGTERM to the brokers together, then to the controllers; SIGKILL to whatever of
    /// either still runs after 15 s.
    pub(super) fn stop(&mut self) {
        for brokers in [true, false] {
            let mut children: Vec<Child> = self
                .nodes
                .iter_mut()
                .filter(|n| n.broker_port.is_some() == brokers)
                .filter_map(|n| n.child.take())
                .collect();
            for child in &children {
                let _ = Command::new("kill").arg(child.id().to_string()).status();
            }
            let deadline = Instant::now() + Duration::from_secs(15);
            while children
                .iter_mut()
                .any(|c| matches!(c.try_wait(), Ok(None)))
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            for mut child in children {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
        println!("cluster stopped");
    }
}

/// A panic between start and stop still ends the nodes (SIGKILL).
impl Drop for Cluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// `broker_config` for one broker: `{port}` is its listener's port; each of [`EXTRA_PORTS`]
/// it names, a fresh free port (returned with its placeholder).
pub(super) fn broker_lines(
    broker_config: &str,
    port: u16,
) -> Result<(String, Vec<(&'static str, u16)>)> {
    let mut lines = broker_config.replace("{port}", &port.to_string());
    let mut ports = Vec::new();
    for name in EXTRA_PORTS {
        let placeholder = format!("{{{name}}}");
        if lines.contains(&placeholder) {
            let port = crate::cluster::free_port()?;
            lines = lines.replace(&placeholder, &port.to_string());
            ports.push((name, port));
        }
    }
    Ok((lines, ports))
}
