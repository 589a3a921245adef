//! The cluster under test: 3 controllers (ids 1-3) and 3-5 brokers (ids 4..) as real
//! `kraftd` processes (or Kafka 4.4.0 JVMs, [`System::Kafka`], formatted and started as the
//! bench starts Kafka), each in its namespace of the [`Lab`], configured and formatted as
//! `cargo xtask cluster-up` does but on the node's own address with fixed ports; the process
//! faults (kill -9 and restart, SIGSTOP and SIGCONT); and the probes the harness and its
//! health check read the cluster with (Metadata, DescribeQuorum, CreateTopics,
//! FindCoordinator, raw).

use std::fs::File;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::bench::kafka::kafka_random_uuid;
use crate::cluster::kraftd_random_uuid;
use anyhow::{bail, Context, Result};
use kraftd_protocol::messages::{
    create_topics_request, describe_acls_response, describe_client_quotas_request,
    describe_configs_request, metadata_request, CreateTopicsRequest, DescribeAclsRequest,
    DescribeClientQuotasRequest, DescribeConfigsRequest, DescribeLogDirsRequest,
    FindCoordinatorRequest, ListPartitionReassignmentsRequest, ListPartitionReassignmentsResponse,
    MetadataRequest, MetadataResponse,
};
use kraftd_protocol::{RequestBody, ResponseBody};

use super::clock::Clocks;
use super::disks::Disks;
use super::net::Lab;
use crate::bench::kafka::{format_kafka_node, kafka_node_command};
use crate::cluster::{call, describe_quorum, describe_quorum_partition, format_node};

/// Every node's client or controller listener port (each node has an address of its own).
const BROKER_PORT: u16 = 9092;
const CONTROLLER_PORT: u16 = 9093;
/// A kraftd node's `metrics.port`.
const METRICS_PORT: u16 = 9094;
/// A probe's budget: a node cut off or paused must not hold the harness up.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);
/// Number of controllers of a static quorum (the voters), and the initial voters of a
/// dynamic one (`--voters`: ids 1-3, the spare controllers after them).
pub(super) const CONTROLLERS: u32 = 3;

/// What the nodes run: kraftd, or Apache Kafka from its jars (the same topology and faults,
/// to tell kraftd's behaviour from what Kafka 4.4.0 does under the same schedule).
#[derive(Debug, Clone)]
pub(super) enum System {
    /// This kraftd binary.
    Kraftd(PathBuf),
    /// `kafka.Kafka` JVMs on this classpath (`target/kafka-jars/*`).
    Kafka(String),
}

impl System {
    pub(super) fn name(&self) -> &'static str {
        match self {
            System::Kraftd(_) => "kraftd",
            System::Kafka(_) => "Kafka 4.4.0",
        }
    }
}

/// A Kafka node's heap: small, as six JVMs share the machine with the clients (Kafka's
/// scripts give 1 GiB).
const KAFKA_BROKER_HEAP: &str = "-Xmx512m";
const KAFKA_CONTROLLER_HEAP: &str = "-Xmx384m";

pub(super) struct Node {
    pub(super) id: u32,
    pub(super) controller: bool,
    config: PathBuf,
    /// Its log dirs (`log.dirs`), the metadata log's first.
    pub(super) log_dirs: Vec<PathBuf>,
    /// The node's own log (kraftd's output, or Kafka's `logs/server.log`).
    log: PathBuf,
    child: Option<Child>,
    pub(super) paused: bool,
    /// What it is started with beside the inherited environment (the clock interposer
    /// with `--clock`).
    env: Vec<(String, PathBuf)>,
}

pub(super) struct Nodes {
    pub(super) nodes: Vec<Node>,
    system: System,
    /// Whether the brokers have a faultable second log dir (`--disks`): then the cluster
    /// is whole only with every log dir online ([`health`]).
    pub(super) disks: bool,
    /// The nodes' clock interposer and offsets (`--clock`).
    clocks: Option<Clocks>,
    /// The cluster id every node was formatted with (a replaced disk is formatted again).
    cluster_id: String,
}

impl Nodes {
    /// Writes, formats and starts every node under `dir`; `node_config` lines are added to
    /// every node's properties, and `broker_config` lines to each broker's. Kafka's nodes get the same properties, with the listener
    /// names mapped to PLAINTEXT as Kafka requires (kraftd infers it). With `disks`, each
    /// broker has a second log dir on its faultable disk. With `spares` (`--voters`) the
    /// quorum is a dynamic one (KIP-853, `kraft.version` 1): every node finds the controllers
    /// through `controller.quorum.bootstrap.servers` (all of them, the spares too: which are
    /// voters changes), controllers 1-3 are formatted with `--initial-controllers` naming
    /// them and the directory ids they take, and `spares` more controllers after them with
    /// `--no-initial-controllers` (observers until added); the brokers' ids follow.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn start(
        system: &System,
        dir: &Path,
        lab: &Lab,
        brokers: u32,
        spares: u32,
        node_config: &str,
        broker_config: &str,
        disks: Option<&Disks>,
        clocks: Option<Clocks>,
    ) -> Result<Nodes> {
        let random_uuid = || match system {
            System::Kraftd(bin) => kraftd_random_uuid(bin),
            System::Kafka(classpath) => kafka_random_uuid(classpath),
        };
        let controllers = CONTROLLERS + spares;
        let controller_addr = |id: u32| format!("{}:{CONTROLLER_PORT}", lab.ip(id));
        let (quorum, initial) = if spares == 0 {
            let voters = (1..=CONTROLLERS)
                .map(|id| format!("{id}@{}", controller_addr(id)))
                .collect::<Vec<_>>()
                .join(",");
            (format!("controller.quorum.voters={voters}"), String::new())
        } else {
            let servers = (1..=controllers)
                .map(controller_addr)
                .collect::<Vec<_>>()
                .join(",");
            let mut initial = Vec::new();
            for id in 1..=CONTROLLERS {
                initial.push(format!("{id}@{}:{}", controller_addr(id), random_uuid()?));
            }
            (
                format!("controller.quorum.bootstrap.servers={servers}"),
                initial.join(","),
            )
        };
        let cluster_id = random_uuid()?;
        let mut nodes = Nodes {
            nodes: Vec::new(),
            system: system.clone(),
            disks: disks.is_some(),
            clocks,
            cluster_id: cluster_id.clone(),
        };
        for id in 1..=controllers + brokers {
            let controller = id <= controllers;
            let node_dir = dir.join(format!("node-{id}"));
            std::fs::create_dir_all(&node_dir)?;
            let (roles, listener, extra) = if controller {
                (
                    "controller",
                    format!("CONTROLLER://{}:{CONTROLLER_PORT}", lab.ip(id)),
                    node_config.to_string(),
                )
            } else {
                (
                    "broker",
                    format!("PLAINTEXT://{}:{BROKER_PORT}", lab.ip(id)),
                    format!("{node_config}{broker_config}"),
                )
            };
            let own = match (system, controller) {
                // METRICS_PORT.
                (System::Kraftd(_), _) => "metrics.port=9094\n",
                (System::Kafka(_), true) => {
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n"
                }
                (System::Kafka(_), false) => {
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT\n\
                     inter.broker.listener.name=PLAINTEXT\n"
                }
            };
            let mut log_dirs = vec![node_dir.join("data")];
            if let (Some(disks), false) = (disks, controller) {
                log_dirs.push(disks.log_dir(id)?);
            }
            let config = node_dir.join("server.properties");
            std::fs::write(
                &config,
                format!(
                    "# written by cargo xtask chaos\n\
                     process.roles={roles}\nnode.id={id}\n{quorum}\n\
                     listeners={listener}\ncontroller.listener.names=CONTROLLER\nlog.dirs={}\n\
                     {own}{extra}",
                    log_dirs
                        .iter()
                        .map(|d| d.display().to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
            )?;
            // A dynamic quorum's controllers: the initial voters, then the spares.
            let format_flags: Vec<&str> = match (controller, spares) {
                (false, _) | (true, 0) => Vec::new(),
                (true, _) if id <= CONTROLLERS => vec!["--initial-controllers", &initial],
                (true, _) => vec!["--no-initial-controllers"],
            };
            let log = match system {
                System::Kraftd(bin) => {
                    format_node(bin, &config, &cluster_id, id, &format_flags)?;
                    node_dir.join("kraftd.log")
                }
                System::Kafka(classpath) => {
                    format_kafka_node(classpath, &cluster_id, &config, &format_flags)
                        .with_context(|| format!("formatting Kafka node {id}"))?;
                    std::fs::create_dir_all(node_dir.join("logs"))?;
                    node_dir.join("logs").join("server.log")
                }
            };
            File::options().create(true).append(true).open(&log)?;
            nodes.nodes.push(Node {
                id,
                controller,
                config,
                log_dirs,
                log,
                child: None,
                paused: false,
                env: nodes.clocks.as_ref().map(|c| c.env(id)).unwrap_or_default(),
            });
            nodes.spawn(lab, id)?;
        }
        Ok(nodes)
    }

    fn node(&mut self, id: u32) -> Result<&mut Node> {
        self.nodes
            .iter_mut()
            .find(|n| n.id == id)
            .with_context(|| format!("no node {id}"))
    }

    /// Starts node `id` (again) on its config, data and log file.
    pub(super) fn spawn(&mut self, lab: &Lab, id: u32) -> Result<()> {
        let system = self.system.clone();
        let node = self.node(id)?;
        let role = if node.controller {
            "controller"
        } else {
            "broker"
        };
        let mut command = match &system {
            System::Kraftd(bin) => {
                let mut command = lab.command(id, bin);
                command
                    .args([role, "--config"])
                    .arg(&node.config)
                    .stdin(Stdio::null())
                    .stdout(File::options().append(true).open(&node.log)?)
                    .stderr(File::options().append(true).open(&node.log)?);
                command
            }
            System::Kafka(classpath) => {
                let mut command = lab.command(id, Path::new("java"));
                let heap = if node.controller {
                    KAFKA_CONTROLLER_HEAP
                } else {
                    KAFKA_BROKER_HEAP
                };
                let node_dir = node.config.parent().context("a node's directory")?;
                kafka_node_command(&mut command, classpath, node_dir, &node.config, heap)?;
                command
            }
        };
        let child = command
            .envs(node.env.iter().map(|(k, v)| (k, v)))
            .spawn()
            .with_context(|| format!("starting node {id}"))?;
        node.child = Some(child);
        node.paused = false;
        Ok(())
    }

    /// SIGKILL to node `id`, reaped.
    pub(super) fn kill9(&mut self, id: u32) -> Result<()> {
        let node = self.node(id)?;
        let mut child = node.child.take().context("node is not running")?;
        child.kill()?;
        child.wait()?;
        node.paused = false;
        Ok(())
    }

    /// SIGTERM to node `id` and its exit awaited (up to `limit`, then SIGKILL), as an
    /// operator stops a broker: how it ended, or why that is not a clean stop.
    pub(super) fn stop_gracefully(&mut self, id: u32, limit: Duration) -> Result<String, String> {
        let jvm = matches!(self.system, System::Kafka(_));
        let node = self.node(id).map_err(|e| format!("{e:#}"))?;
        let mut child = node.child.take().ok_or("node is not running")?;
        node.paused = false;
        let started = std::time::Instant::now();
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        loop {
            match child.try_wait() {
                // A JVM exits 143 (128 + SIGTERM) once its shutdown hooks — Kafka's clean
                // shutdown — have run.
                Ok(Some(status)) if status.success() || (jvm && status.code() == Some(143)) => {
                    return Ok(format!(
                        "stopped ({status}) in {:.1} s",
                        started.elapsed().as_secs_f64()
                    ))
                }
                Ok(Some(status)) => return Err(format!("exited with {status} after SIGTERM")),
                Ok(None) if started.elapsed() < limit => {
                    std::thread::sleep(Duration::from_millis(100))
                }
                Ok(None) | Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(format!("still running {limit:?} after SIGTERM; killed"));
                }
            }
        }
    }

    /// Cuts up to `bytes` off the end of the active (last) segment of each partition of
    /// `topic` that stopped node `id` holds, as lost unflushed writes; says what it cut.
    pub(super) fn lose_tail(&mut self, id: u32, topic: &str, bytes: u64) -> Result<Vec<String>> {
        let node = self.node(id)?;
        if node.child.is_some() {
            bail!("node {id} runs: its files are not to be cut under it");
        }
        let mut cut = Vec::new();
        let mut dirs: Vec<PathBuf> = Vec::new();
        for log_dir in &node.log_dirs {
            dirs.extend(std::fs::read_dir(log_dir)?.filter_map(|e| Some(e.ok()?.path())));
        }
        dirs.retain(|p| {
            p.is_dir()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix(topic)?.strip_prefix('-'))
                    .is_some_and(|n| n.parse::<u32>().is_ok())
        });
        dirs.sort();
        for dir in dirs {
            let mut logs: Vec<PathBuf> = std::fs::read_dir(&dir)?
                .filter_map(|e| Some(e.ok()?.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "log"))
                .collect();
            logs.sort();
            let Some(active) = logs.last() else { continue };
            let file = std::fs::OpenOptions::new().write(true).open(active)?;
            let len = file.metadata()?.len();
            let new_len = len.saturating_sub(bytes);
            file.set_len(new_len)?;
            cut.push(format!(
                "{}/{} {len} -> {new_len} bytes",
                dir.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
                active.file_name().and_then(|n| n.to_str()).unwrap_or("?"),
            ));
        }
        Ok(cut)
    }

    /// SIGSTOP (`pause`) or SIGCONT to node `id`.
    pub(super) fn signal_pause(&mut self, id: u32, pause: bool) -> Result<()> {
        let node = self.node(id)?;
        let pid = node.child.as_ref().context("node is not running")?.id();
        signal(pid, if pause { "STOP" } else { "CONT" })?;
        node.paused = pause;
        Ok(())
    }

    /// A node that exited by itself (not killed by the harness): its id and status.
    pub(super) fn exited(&mut self) -> Option<(u32, String)> {
        self.nodes.iter_mut().find_map(|n| {
            let status = n.child.as_mut()?.try_wait().ok()??;
            n.child = None;
            Some((n.id, status.to_string()))
        })
    }

    /// Whether node `id` runs (started and not killed).
    pub(super) fn running(&self, id: u32) -> bool {
        self.nodes.iter().any(|n| n.id == id && n.child.is_some())
    }

    pub(super) fn broker_ids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter(|n| !n.controller)
            .map(|n| n.id)
            .collect()
    }

    /// The controllers (the initial voters and, with `--voters`, the spares).
    pub(super) fn controller_ids(&self) -> Vec<u32> {
        self.nodes
            .iter()
            .filter(|n| n.controller)
            .map(|n| n.id)
            .collect()
    }

    /// Where the quorum is found ([`Quorum`]).
    pub(super) fn quorum(&self) -> Quorum {
        let controllers = self.controller_ids();
        Quorum {
            dynamic: controllers.len() > CONTROLLERS as usize,
            controllers,
        }
    }

    /// Node `id`'s properties file.
    pub(super) fn config(&self, id: u32) -> Option<&Path> {
        self.nodes
            .iter()
            .find(|n| n.id == id)
            .map(|n| n.config.as_path())
    }

    /// The `directory.id` of node `id`'s metadata log dir (its first), as format wrote it:
    /// with the node id, the replica key a voter is added and removed by (KIP-853).
    pub(super) fn metadata_dir_id(&self, id: u32) -> Result<String> {
        directory_id(self.metadata_dir(id)?)
    }

    /// Node `id`'s metadata log dir (its first log dir).
    pub(super) fn metadata_dir(&self, id: u32) -> Result<&Path> {
        self.log_dirs(id)
            .and_then(|d| d.first())
            .map(PathBuf::as_path)
            .with_context(|| format!("no node {id}"))
    }

    /// Controller `id`'s metadata disk lost and replaced, as KIP-853's disk replacement
    /// begins: the node (stopped) gets its metadata dir emptied and formatted again with
    /// `--no-initial-controllers`, which draws a new directory id. Started again, it is an
    /// observer — its replica key is not the voter's — until an operator removes the old key
    /// and adds the new one (`voters.rs` does). Returns the old and the new directory id.
    pub(super) fn replace_metadata_disk(&mut self, id: u32) -> Result<(String, String)> {
        let node = self.node(id)?;
        if node.child.is_some() {
            bail!("node {id} is running: its disk is replaced only while it is stopped");
        }
        let config = node.config.clone();
        let dir = self.metadata_dir(id)?.to_path_buf();
        let old = directory_id(&dir)?;
        std::fs::remove_dir_all(&dir).with_context(|| format!("removing {}", dir.display()))?;
        std::fs::create_dir_all(&dir)?;
        let flags = ["--no-initial-controllers"];
        match &self.system {
            System::Kraftd(bin) => format_node(bin, &config, &self.cluster_id, id, &flags)?,
            System::Kafka(classpath) => {
                format_kafka_node(classpath, &self.cluster_id, &config, &flags)
                    .with_context(|| format!("formatting Kafka node {id} again"))?
            }
        }
        Ok((old, directory_id(&dir)?))
    }

    /// Node `id`'s log dirs.
    pub(super) fn log_dirs(&self, id: u32) -> Option<&[PathBuf]> {
        self.nodes
            .iter()
            .find(|n| n.id == id)
            .map(|n| &n.log_dirs[..])
    }

    /// The nodes' clocks, with `--clock`.
    pub(super) fn clocks(&self) -> Option<&Clocks> {
        self.clocks.as_ref()
    }

    /// What the nodes run.
    pub(super) fn system(&self) -> &System {
        &self.system
    }

    /// The kraftd binary the nodes run (none for Kafka's).
    pub(super) fn kraftd_bin(&self) -> Option<&Path> {
        match &self.system {
            System::Kraftd(bin) => Some(bin),
            System::Kafka(_) => None,
        }
    }

    pub(super) fn all_ids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// The last `lines` lines of node `id`'s log.
    pub(super) fn log_tail(&self, id: u32, lines: usize) -> String {
        let Some(node) = self.nodes.iter().find(|n| n.id == id) else {
            return String::new();
        };
        let text = std::fs::read_to_string(&node.log).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// SIGCONT then SIGKILL to every node: the run's verdict is in by then.
    pub(super) fn stop(&mut self) {
        for node in &mut self.nodes {
            if let Some(mut child) = node.child.take() {
                let _ = Command::new("kill")
                    .args(["-CONT", &child.id().to_string()])
                    .status();
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Node `id`'s client listener.
pub(super) fn broker_addr(lab: &Lab, id: u32) -> SocketAddr {
    SocketAddr::from((lab.ip(id), BROKER_PORT))
}

/// Node `id`'s `/metrics` (kraftd's nodes).
pub(super) fn metrics_addr(lab: &Lab, id: u32) -> SocketAddr {
    SocketAddr::from((lab.ip(id), METRICS_PORT))
}

/// The bootstrap servers of `ids` for a client.
pub(super) fn bootstrap(lab: &Lab, ids: &[u32]) -> String {
    ids.iter()
        .map(|&id| broker_addr(lab, id).to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// Metadata v12 of `topic` from broker `id`.
pub(super) fn metadata(lab: &Lab, id: u32, topic: &str) -> Result<MetadataResponse> {
    let body = RequestBody::Metadata(MetadataRequest {
        topics: Some(vec![metadata_request::MetadataRequestTopic {
            name: Some(topic.to_string()),
            ..Default::default()
        }]),
        // The schema's default is true: the harness's probes must not create the topic.
        allow_auto_topic_creation: false,
        ..Default::default()
    });
    match call(broker_addr(lab, id), 12, body, PROBE_TIMEOUT)? {
        ResponseBody::Metadata(m) => Ok(m),
        _ => bail!("not a Metadata response"),
    }
}

/// Metadata v12 of every topic from broker `id`.
pub(super) fn metadata_all(lab: &Lab, id: u32) -> Result<MetadataResponse> {
    let body = RequestBody::Metadata(MetadataRequest {
        topics: None,
        allow_auto_topic_creation: false,
        ..Default::default()
    });
    match call(broker_addr(lab, id), 12, body, PROBE_TIMEOUT)? {
        ResponseBody::Metadata(m) => Ok(m),
        _ => bail!("not a Metadata response"),
    }
}

/// Topic `topic`'s config `key` as broker `id` describes it (DescribeConfigs v4).
pub(super) fn topic_config(lab: &Lab, id: u32, topic: &str, key: &str) -> Result<Option<String>> {
    config_of(lab, id, 2, topic, key) // TOPIC
}

/// Config `key` of broker `id` itself as it answers DescribeConfigs: its own value, or the
/// cluster-wide default it took (a broker answers for its own resource only, from its own
/// metadata image).
pub(super) fn broker_config(lab: &Lab, id: u32, key: &str) -> Result<Option<String>> {
    config_of(lab, id, 4, &id.to_string(), key) // BROKER
}

/// Config `key` of resource `name` of type `resource_type`, as broker `id` answers.
fn config_of(
    lab: &Lab,
    id: u32,
    resource_type: i8,
    name: &str,
    key: &str,
) -> Result<Option<String>> {
    let body = RequestBody::DescribeConfigs(DescribeConfigsRequest {
        resources: vec![describe_configs_request::DescribeConfigsResource {
            resource_type,
            resource_name: name.to_string(),
            configuration_keys: Some(vec![key.to_string()]),
            ..Default::default()
        }],
        ..Default::default()
    });
    match call(broker_addr(lab, id), 4, body, PROBE_TIMEOUT)? {
        ResponseBody::DescribeConfigs(r) => {
            let result = r.results.into_iter().next().context("no result")?;
            if result.error_code != 0 {
                bail!("DescribeConfigs of {name}: error {}", result.error_code);
            }
            Ok(result
                .configs
                .into_iter()
                .find(|c| c.name == key)
                .and_then(|c| c.value))
        }
        _ => bail!("not a DescribeConfigs response"),
    }
}

/// Every ACL broker `id` holds, by resource (DescribeAcls v3 with a filter matching all).
pub(super) fn acls(
    lab: &Lab,
    id: u32,
) -> Result<Vec<describe_acls_response::DescribeAclsResource>> {
    // ANY (1) for every enum of the filter; no name, principal or host (null: the
    // generated default is the empty string, which matches nothing).
    let body = RequestBody::DescribeAcls(DescribeAclsRequest {
        resource_type_filter: 1,
        resource_name_filter: None,
        pattern_type_filter: 1,
        principal_filter: None,
        host_filter: None,
        operation: 1,
        permission_type: 1,
        ..Default::default()
    });
    match call(broker_addr(lab, id), 3, body, PROBE_TIMEOUT)? {
        ResponseBody::DescribeAcls(r) if r.error_code == 0 => Ok(r.resources),
        ResponseBody::DescribeAcls(r) => bail!(
            "DescribeAcls: error {} ({:?})",
            r.error_code,
            r.error_message
        ),
        _ => bail!("not a DescribeAcls response"),
    }
}

/// Quota `key` of client id `client_id` (exactly that entity) as broker `id` answers
/// DescribeClientQuotas (v1, strict).
pub(super) fn client_quota(lab: &Lab, id: u32, client_id: &str, key: &str) -> Result<Option<f64>> {
    let body = RequestBody::DescribeClientQuotas(DescribeClientQuotasRequest {
        components: vec![describe_client_quotas_request::ComponentData {
            entity_type: "client-id".to_string(),
            match_type: 0,
            r#match: Some(client_id.to_string()),
            ..Default::default()
        }],
        strict: true,
        ..Default::default()
    });
    match call(broker_addr(lab, id), 1, body, PROBE_TIMEOUT)? {
        ResponseBody::DescribeClientQuotas(r) if r.error_code == 0 => Ok(r
            .entries
            .unwrap_or_default()
            .into_iter()
            .flat_map(|e| e.values)
            .find(|v| v.key == key)
            .map(|v| v.value)),
        ResponseBody::DescribeClientQuotas(r) => bail!(
            "DescribeClientQuotas: error {} ({:?})",
            r.error_code,
            r.error_message
        ),
        _ => bail!("not a DescribeClientQuotas response"),
    }
}

/// The broker that coordinates `transactional_id`, as broker `id` answers FindCoordinator
/// (v3, key type 1: a transaction coordinator).
pub(super) fn txn_coordinator(lab: &Lab, id: u32, transactional_id: &str) -> Result<u32> {
    let body = RequestBody::FindCoordinator(FindCoordinatorRequest {
        key: transactional_id.to_string(),
        key_type: 1,
        ..Default::default()
    });
    match call(broker_addr(lab, id), 3, body, PROBE_TIMEOUT)? {
        ResponseBody::FindCoordinator(r) if r.error_code == 0 && r.node_id >= 0 => {
            Ok(r.node_id as u32)
        }
        ResponseBody::FindCoordinator(r) => bail!("FindCoordinator: error {}", r.error_code),
        _ => bail!("not a FindCoordinator response"),
    }
}

/// ListPartitionReassignments v0 of every partition through broker `id` (forwarded to the
/// active controller, as Kafka's brokers do), its top-level error an `Err`.
pub(super) fn list_reassignments(lab: &Lab, id: u32) -> Result<ListPartitionReassignmentsResponse> {
    let body = RequestBody::ListPartitionReassignments(ListPartitionReassignmentsRequest {
        timeout_ms: 10_000,
        topics: None,
        ..Default::default()
    });
    match call(broker_addr(lab, id), 0, body, Duration::from_secs(15))? {
        ResponseBody::ListPartitionReassignments(r) if r.error_code == 0 => Ok(r),
        ResponseBody::ListPartitionReassignments(r) => {
            bail!("ListPartitionReassignments: error {}", r.error_code)
        }
        _ => bail!("not a ListPartitionReassignments response"),
    }
}

/// The controllers the harness finds the quorum among, and whether its voter set is fixed
/// (`controller.quorum.voters`: all of them, always) or changes (`--voters`: a dynamic
/// quorum whose voters are some of them).
#[derive(Debug, Clone)]
pub(super) struct Quorum {
    pub(super) controllers: Vec<u32>,
    pub(super) dynamic: bool,
}

/// The controller (of `controllers`) that answers DescribeQuorum as the leader, if one does
/// now.
pub(super) fn active_controller(lab: &Lab, controllers: &[u32]) -> Option<u32> {
    controllers.iter().copied().find(|&id| {
        describe_quorum(controller_addr(lab, id)).is_ok_and(|(leader, ..)| leader == id as i32)
    })
}

/// The voters now, as the active controller answers DescribeQuorum; `None` without one.
pub(super) fn current_voters(lab: &Lab, controllers: &[u32]) -> Option<Vec<u32>> {
    let leader = active_controller(lab, controllers)?;
    let (.., voters) = describe_quorum(controller_addr(lab, leader)).ok()?;
    Some(voters.iter().map(|v| v.0 as u32).collect())
}

/// The voters now with their directory ids (their replica keys, KIP-853), as the active
/// controller answers DescribeQuorum v2; `None` without one.
pub(super) fn current_voter_keys(lab: &Lab, controllers: &[u32]) -> Option<Vec<(u32, String)>> {
    let leader = active_controller(lab, controllers)?;
    let p = describe_quorum_partition(controller_addr(lab, leader), 2).ok()?;
    Some(
        p.current_voters
            .iter()
            .map(|v| (v.replica_id as u32, v.replica_directory_id.to_base64()))
            .collect(),
    )
}

/// The `directory.id` in `log_dir`'s `meta.properties`.
pub(super) fn directory_id(log_dir: &Path) -> Result<String> {
    let path = log_dir.join("meta.properties");
    let text =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("directory.id="))
        .map(|d| d.trim().to_string())
        .with_context(|| format!("no directory.id in {}", path.display()))
}

/// Node `id`'s controller listener.
pub(super) fn controller_addr(lab: &Lab, id: u32) -> SocketAddr {
    SocketAddr::from((lab.ip(id), CONTROLLER_PORT))
}

/// Whether the quorum is whole: a leader, and every voter's log end at its high watermark;
/// the voters every controller of a static quorum, and of a dynamic one whichever the leader
/// has now (the voter set the changes left is `voters_checker.rs`'s to judge).
pub(super) fn quorum_whole(lab: &Lab, quorum: &Quorum) -> Result<(), String> {
    let leader =
        active_controller(lab, &quorum.controllers).ok_or("no controller answers as the leader")?;
    let (_, epoch, hw, voters) = describe_quorum(controller_addr(lab, leader))
        .map_err(|e| format!("DescribeQuorum to {leader}: {e:#}"))?;
    let behind: Vec<_> = voters.iter().filter(|v| v.1 < hw).collect();
    let count_wrong = !quorum.dynamic && voters.len() != quorum.controllers.len();
    if voters.is_empty() || count_wrong || !behind.is_empty() {
        return Err(format!(
            "quorum (leader {leader}, epoch {epoch}, hw {hw}, voters {:?}): voters behind \
             {behind:?}",
            voters.iter().map(|v| v.0).collect::<Vec<_>>()
        ));
    }
    Ok(())
}

/// CreateTopics of `topic` (RF 3, `configs`) through broker `id`, retried until it is
/// created or exists, for up to `limit`.
pub(super) fn create_topic(
    lab: &Lab,
    id: u32,
    topic: &str,
    partitions: i32,
    configs: &[(&str, &str)],
    limit: Duration,
) -> Result<()> {
    let deadline = std::time::Instant::now() + limit;
    let mut last = String::new();
    while std::time::Instant::now() < deadline {
        let body = RequestBody::CreateTopics(CreateTopicsRequest {
            topics: vec![create_topics_request::CreatableTopic {
                name: topic.to_string(),
                num_partitions: partitions,
                replication_factor: 3,
                configs: configs
                    .iter()
                    .map(|(k, v)| create_topics_request::CreatableTopicConfig {
                        name: k.to_string(),
                        value: Some(v.to_string()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            timeout_ms: 10_000,
            ..Default::default()
        });
        match call(broker_addr(lab, id), 7, body, Duration::from_secs(15)) {
            Ok(ResponseBody::CreateTopics(r)) => {
                let code = r.topics.first().map_or(-1, |t| t.error_code);
                // NONE, or TOPIC_ALREADY_EXISTS: an earlier attempt's topic committed.
                if code == 0 || code == 36 {
                    return Ok(());
                }
                last = format!("error code {code}");
            }
            Ok(_) => last = "not a CreateTopics response".into(),
            Err(e) => last = format!("{e:#}"),
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    bail!("creating {topic} did not succeed within {limit:?} (last: {last})")
}

/// Whether the cluster is whole: every broker lists every broker (all registered and
/// unfenced), every partition of every topic (the internal ones too) with a leader and its
/// full ISR, and `topic`, once it exists, with its `partitions`; with `dirs`, every log dir
/// of every broker online (DescribeLogDirs); and the quorum is whole ([`quorum_whole`]).
/// Else what is not.
pub(super) fn health(
    lab: &Lab,
    brokers: &[u32],
    quorum: &Quorum,
    topic: &str,
    partitions: i32,
    dirs: bool,
) -> Result<(), String> {
    for &id in brokers {
        let m = metadata_all(lab, id).map_err(|e| format!("Metadata from broker {id}: {e:#}"))?;
        let listed: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
        if listed.len() != brokers.len() {
            return Err(format!("broker {id} lists brokers {listed:?}"));
        }
        for t in &m.topics {
            let name = t.name.as_deref().unwrap_or("?");
            if t.error_code != 0 {
                return Err(format!("broker {id}: topic {name} error {}", t.error_code));
            }
            if name == topic && t.partitions.len() != partitions as usize {
                return Err(format!(
                    "broker {id} lists {} partitions of {topic}",
                    t.partitions.len()
                ));
            }
            for p in &t.partitions {
                let (mut replicas, mut isr) = (p.replica_nodes.clone(), p.isr_nodes.clone());
                replicas.sort_unstable();
                isr.sort_unstable();
                if p.leader_id < 0 || replicas != isr {
                    return Err(format!(
                        "broker {id}: {name}-{} leader {} replicas {replicas:?} ISR {isr:?}",
                        p.partition_index, p.leader_id
                    ));
                }
            }
        }
    }
    if dirs {
        for &id in brokers {
            let described = describe_log_dirs(lab, id)
                .map_err(|e| format!("DescribeLogDirs of {id}: {e:#}"))?;
            let offline: Vec<&str> = described
                .iter()
                .filter(|(_, code, _)| *code != 0)
                .map(|(dir, ..)| dir.as_str())
                .collect();
            if !offline.is_empty() || described.len() < 2 {
                return Err(format!(
                    "broker {id}'s log dirs offline: {offline:?} (of {} described)",
                    described.len()
                ));
            }
        }
    }
    quorum_whole(lab, quorum)
}

/// Broker `id`'s log dirs as it describes them (DescribeLogDirs v4, every topic): each
/// dir's path, its error code (56, KAFKA_STORAGE_ERROR, when offline) and the topics of
/// the partitions in it.
pub(super) fn describe_log_dirs(lab: &Lab, id: u32) -> Result<Vec<(String, i16, Vec<String>)>> {
    let body = RequestBody::DescribeLogDirs(DescribeLogDirsRequest {
        topics: None,
        ..Default::default()
    });
    match call(broker_addr(lab, id), 4, body, PROBE_TIMEOUT)? {
        ResponseBody::DescribeLogDirs(r) if r.error_code == 0 => Ok(r
            .results
            .into_iter()
            .map(|d| {
                let topics = d.topics.into_iter().map(|t| t.name).collect();
                (d.log_dir, d.error_code, topics)
            })
            .collect()),
        ResponseBody::DescribeLogDirs(r) => bail!("DescribeLogDirs: error {}", r.error_code),
        _ => bail!("not a DescribeLogDirs response"),
    }
}

/// Sends `signal` (`STOP`, `CONT`) to process `pid` (a node, or a workload process).
pub(super) fn signal(pid: u32, signal: &str) -> Result<()> {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()?;
    if !status.success() {
        bail!("kill -{signal} {pid} failed");
    }
    Ok(())
}
