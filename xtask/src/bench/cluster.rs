//! The benchmarked cluster as child processes of this one, kraftd's or Kafka's alike: waiting
//! for its brokers, their bootstrap list and CPU, and stopping it (on a panic too). Starting
//! each system's nodes is in `kraftd.rs` and `kafka.rs`. A broker config may name `{port}`
//! (the broker's listener port) and `{ssl_port}` (a second free port, for a second
//! listener), substituted per broker by [`broker_lines`].

use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::machine::process_ticks;
use crate::cluster::alive_brokers;

pub(super) struct BenchNode {
    pub(super) id: u32,
    pub(super) broker_port: Option<u16>,
    /// A broker's second listener's port, when its config asked for one (`{ssl_port}`).
    pub(super) ssl_port: Option<u16>,
    pub(super) child: Option<Child>,
}

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

    /// The brokers' `{ssl_port}` listeners, comma-separated.
    pub(super) fn ssl_bootstrap(&self) -> String {
        self.nodes
            .iter()
            .filter_map(|n| Some(format!("127.0.0.1:{}", n.ssl_port?)))
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

/// `broker_config` for one broker: `{port}` is its listener's port; `{ssl_port}`, if named,
/// a fresh free port (returned).
pub(super) fn broker_lines(broker_config: &str, port: u16) -> Result<(String, Option<u16>)> {
    let ssl_port = if broker_config.contains("{ssl_port}") {
        Some(crate::cluster::free_port()?)
    } else {
        None
    };
    let lines = broker_config
        .replace("{port}", &port.to_string())
        .replace("{ssl_port}", &ssl_port.unwrap_or(0).to_string());
    Ok((lines, ssl_port))
}
