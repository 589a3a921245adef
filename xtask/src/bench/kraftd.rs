//! Starting kraftd for the benchmark: 3 controllers and 3 brokers from the release build,
//! configured and formatted as `cargo xtask cluster-up` does.

use std::fs::File;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::cluster::kraftd_random_uuid;
use anyhow::{Context, Result};

use super::cluster::{BenchNode, Cluster, Respawn};
use crate::cluster::free_port;

impl Cluster {
    /// kraftd: 3 controllers (ids 1-3) and 3 brokers (4-6) on free loopback ports, configured,
    /// formatted and started as `cargo xtask cluster-up` does, but under `dir` and as children
    /// of this process, `broker_config` (properties lines) added to each broker's file;
    /// returns once every broker is registered and unfenced.
    pub(super) fn start_kraftd(bin: &Path, dir: &Path, broker_config: &str) -> Result<Cluster> {
        Cluster::start_kraftd_formatted(bin, dir, broker_config, &[])
    }

    /// [`Cluster::start_kraftd`] with the controllers formatted with `format_args` added to
    /// `kraftd format` (as `--add-scram`, the same arguments Kafka's StorageTool takes).
    pub(super) fn start_kraftd_formatted(
        bin: &Path,
        dir: &Path,
        broker_config: &str,
        format_args: &[&str],
    ) -> Result<Cluster> {
        Cluster::start_kraftd_with_controllers(bin, dir, broker_config, "", format_args)
    }

    /// [`Cluster::start_kraftd_formatted`] with `controller_config` lines added to each
    /// controller's properties (as `leader.imbalance.check.interval.seconds=5`).
    pub(super) fn start_kraftd_with_controllers(
        bin: &Path,
        dir: &Path,
        broker_config: &str,
        controller_config: &str,
        format_args: &[&str],
    ) -> Result<Cluster> {
        let mut cluster = Cluster { nodes: Vec::new() };
        match cluster.start_kraftd_inner(bin, dir, broker_config, controller_config, format_args) {
            Ok(()) => Ok(cluster),
            Err(e) => {
                cluster.stop();
                Err(e)
            }
        }
    }

    fn start_kraftd_inner(
        &mut self,
        bin: &Path,
        dir: &Path,
        broker_config: &str,
        controller_config: &str,
        format_args: &[&str],
    ) -> Result<()> {
        let mut layout = Vec::new();
        for id in 1..=6u32 {
            let controller = id <= 3;
            layout.push((id, controller, free_port()?, free_port()?));
        }
        let voters = layout
            .iter()
            .filter(|n| n.1)
            .map(|n| format!("{}@127.0.0.1:{}", n.0, n.2))
            .collect::<Vec<_>>()
            .join(",");
        let cluster_id = kraftd_random_uuid(bin)?;
        for &(id, controller, port, metrics_port) in &layout {
            let node_dir = dir.join(format!("node-{id}"));
            std::fs::create_dir_all(&node_dir)?;
            let (roles, listener) = if controller {
                ("controller", format!("CONTROLLER://127.0.0.1:{port}"))
            } else {
                ("broker", format!("PLAINTEXT://127.0.0.1:{port}"))
            };
            let config = node_dir.join("server.properties");
            let (extra, extra_ports) = if controller {
                (controller_config.to_string(), Vec::new())
            } else {
                super::cluster::broker_lines(broker_config, port)?
            };
            std::fs::write(
                &config,
                format!(
                    "# written by cargo xtask bench\n\
                     process.roles={roles}\nnode.id={id}\ncontroller.quorum.voters={voters}\n\
                     listeners={listener}\ncontroller.listener.names=CONTROLLER\nlog.dirs={}\n\
                     metrics.port={metrics_port}\n{extra}",
                    node_dir.join("data").display(),
                ),
            )?;
            let format_args = if controller { format_args } else { &[] };
            crate::cluster::format_node(bin, &config, &cluster_id, id, format_args)?;
            let respawn = kraftd_respawn(bin, roles, &config, &node_dir, id)?;
            let child = respawn()?;
            println!("started node {id} ({roles}) pid {}", child.id());
            self.nodes.push(BenchNode {
                id,
                broker_port: (!controller).then_some(port),
                extra_ports,
                child: Some(child),
                controller_port: controller.then_some(port),
                respawn: Some(respawn),
            });
        }
        self.wait_brokers(Duration::from_secs(60))
    }
}

/// Starts kraftd as `role` (`controller`, `broker`) on `config`, its output appended to
/// `node_dir/kraftd.log` (created empty here): the node's first start and every restart.
pub(super) fn kraftd_respawn(
    bin: &Path,
    role: &'static str,
    config: &Path,
    node_dir: &Path,
    id: u32,
) -> Result<Respawn> {
    let log = node_dir.join("kraftd.log");
    File::create(&log)?;
    let (bin, config) = (bin.to_path_buf(), config.to_path_buf());
    Ok(Box::new(move || {
        Command::new(&bin)
            .args([role, "--config"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(File::options().append(true).open(&log)?)
            .stderr(File::options().append(true).open(&log)?)
            .spawn()
            .with_context(|| format!("starting node {id}"))
    }))
}
