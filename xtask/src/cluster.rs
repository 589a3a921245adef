//! `cargo xtask cluster-up|cluster-down|cluster-status|cluster-logs`: a local cluster of real
//! `kraftd` processes under `target/cluster/` for trying things by hand. `cluster-up` builds
//! kraftd, writes a config per node with Kafka's property names on free loopback ports,
//! formats every node with one cluster id, starts them (detached, so they outlive this
//! command), shows progress, waits until every broker is registered and unfenced (it appears
//! in a Metadata response), and prints the bootstrap servers. The cluster's layout is kept in
//! `target/cluster/cluster.json` for the other commands.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::{
    describe_quorum_request, describe_quorum_response, DescribeQuorumRequest, MetadataRequest,
    RequestHeader,
};
use kraftd_protocol::{RequestBody, ResponseBody};
use serde_json::{json, Value};

#[derive(clap::Args, Debug)]
pub struct UpArgs {
    /// Controller-only nodes.
    #[arg(long, default_value_t = 3)]
    controllers: u32,
    /// Broker-only nodes.
    #[arg(long, default_value_t = 3)]
    brokers: u32,
    /// Combined (broker and controller) nodes, counted as voters too.
    #[arg(long, default_value_t = 0)]
    combined: u32,
    /// Build and run the release binary.
    #[arg(long)]
    release: bool,
    /// How long to wait for every broker to be unfenced.
    #[arg(long, default_value_t = 60)]
    timeout_secs: u64,
}

struct Node {
    id: u32,
    roles: &'static str,
    controller_port: Option<u16>,
    broker_port: Option<u16>,
    metrics_port: u16,
}

fn cluster_dir(root: &Path) -> PathBuf {
    root.join("target").join("cluster")
}

pub(crate) fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

pub fn up(root: &Path, args: UpArgs) -> Result<()> {
    let dir = cluster_dir(root);
    if dir.join("cluster.json").exists() {
        bail!(
            "a cluster already runs from {} (cargo xtask cluster-down first)",
            dir.display()
        );
    }
    if args.controllers + args.combined == 0 {
        bail!("a cluster needs at least one controller or combined node");
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = vec!["build", "--bin", "kraftd"];
    if args.release {
        build.push("--release");
    }
    crate::run(root, &cargo, &build)?;
    let bin = root
        .join("target")
        .join(if args.release { "release" } else { "debug" })
        .join("kraftd");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;

    let mut nodes = Vec::new();
    let mut id = 1;
    for (count, roles) in [
        (args.controllers, "controller"),
        (args.combined, "broker,controller"),
        (args.brokers, "broker"),
    ] {
        for _ in 0..count {
            nodes.push(Node {
                id,
                roles,
                controller_port: roles.contains("controller").then(free_port).transpose()?,
                broker_port: roles.contains("broker").then(free_port).transpose()?,
                metrics_port: free_port()?,
            });
            id += 1;
        }
    }
    let voters = nodes
        .iter()
        .filter_map(|n| Some(format!("{}@127.0.0.1:{}", n.id, n.controller_port?)))
        .collect::<Vec<_>>()
        .join(",");
    let cluster_id = kraftd_random_uuid(&bin)?;
    let mut state = Vec::new();
    for node in &nodes {
        let node_dir = dir.join(format!("node-{}", node.id));
        std::fs::create_dir_all(&node_dir)?;
        let mut listeners = Vec::new();
        if let Some(p) = node.broker_port {
            listeners.push(format!("PLAINTEXT://127.0.0.1:{p}"));
        }
        if let Some(p) = node.controller_port {
            listeners.push(format!("CONTROLLER://127.0.0.1:{p}"));
        }
        let config = node_dir.join("server.properties");
        std::fs::write(
            &config,
            format!(
                "# written by cargo xtask cluster-up\n\
                 process.roles={}\nnode.id={}\ncontroller.quorum.voters={voters}\n\
                 listeners={}\ncontroller.listener.names=CONTROLLER\nlog.dirs={}\n\
                 metrics.port={}\n",
                node.roles,
                node.id,
                listeners.join(","),
                node_dir.join("data").display(),
                node.metrics_port
            ),
        )?;
        format_node(&bin, &config, &cluster_id, node.id, &[])?;
        let command = if node.roles.contains(',') {
            "combined"
        } else {
            node.roles
        };
        let log = node_dir.join("kraftd.log");
        let child = Command::new("setsid")
            .arg(&bin)
            .args([command, "--config"])
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&log)?)
            .stderr(std::fs::File::options().append(true).open(&log)?)
            .spawn()
            .with_context(|| format!("starting node {}", node.id))?;
        println!(
            "started node {} ({}) pid {}, metrics on 127.0.0.1:{}{}{}",
            node.id,
            node.roles,
            child.id(),
            node.metrics_port,
            node.broker_port
                .map(|p| format!(", clients on 127.0.0.1:{p}"))
                .unwrap_or_default(),
            node.controller_port
                .map(|p| format!(", controller on 127.0.0.1:{p}"))
                .unwrap_or_default()
        );
        state.push(json!({
            "id": node.id,
            "roles": node.roles,
            "pid": child.id(),
            "controller_port": node.controller_port,
            "broker_port": node.broker_port,
            "metrics_port": node.metrics_port,
            "log": log,
        }));
    }
    std::fs::write(
        dir.join("cluster.json"),
        serde_json::to_string_pretty(&json!({"cluster_id": cluster_id, "nodes": state}))?,
    )?;
    let brokers: Vec<(u32, u16)> = nodes
        .iter()
        .filter_map(|n| Some((n.id, n.broker_port?)))
        .collect();
    if let Some(&(_, port)) = brokers.first() {
        let deadline = Instant::now() + Duration::from_secs(args.timeout_secs);
        let mut last_seen = usize::MAX;
        loop {
            let seen = alive_brokers(port).unwrap_or_default();
            if seen.len() != last_seen {
                println!(
                    "{}/{} brokers registered and unfenced",
                    seen.len(),
                    brokers.len()
                );
                last_seen = seen.len();
            }
            if seen.len() == brokers.len() {
                break;
            }
            if Instant::now() >= deadline {
                bail!(
                    "only {:?} of {} brokers unfenced after {}s; see `cargo xtask cluster-logs N`",
                    seen,
                    brokers.len(),
                    args.timeout_secs
                );
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        let bootstrap = brokers
            .iter()
            .map(|(_, p)| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        println!("cluster {cluster_id} is up; bootstrap servers: {bootstrap}");
    } else {
        println!("cluster {cluster_id} is up (controllers only)");
    }
    Ok(())
}

/// The broker ids a Metadata response from `127.0.0.1:port` lists (the unfenced ones).
pub(crate) fn alive_brokers(port: u16) -> Result<Vec<i32>> {
    let body = RequestBody::Metadata(MetadataRequest {
        topics: Some(Vec::new()),
        ..Default::default()
    });
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    match call(addr, 12, body, Duration::from_secs(2))? {
        ResponseBody::Metadata(m) => Ok(m.brokers.iter().map(|b| b.node_id).collect()),
        _ => Err(anyhow!("not a Metadata response")),
    }
}

/// One request to `addr` over a fresh connection, with `timeout` for connecting, writing
/// and reading: the xtask commands' probe of a node (cluster-up, the benches, chaos).
pub(crate) fn call(
    addr: SocketAddr,
    version: i16,
    body: RequestBody,
    timeout: Duration,
) -> Result<ResponseBody> {
    let api = body.key();
    let header = RequestHeader {
        request_api_key: api.code(),
        request_api_version: version,
        correlation_id: 1,
        client_id: Some("xtask".into()),
        ..Default::default()
    };
    let frame = encode_request(&header, &body)?.into_bytes();
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    stream.write_all(&(frame.len() as i32).to_be_bytes())?;
    stream.write_all(&frame)?;
    let mut size = [0u8; 4];
    stream.read_exact(&mut size)?;
    let mut buf = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
    stream.read_exact(&mut buf)?;
    let (_, response) = decode_response(api, version, Bytes::from(buf))?;
    Ok(response)
}

/// DescribeQuorum v1 of `__cluster_metadata`: (leader, epoch, hw, voters' (id, end offset,
/// last caught-up ms)), or an error from a controller that does not lead.
pub(crate) type Quorum = (i32, i32, i64, Vec<(i32, i64, i64)>);

/// [`Quorum`] as the controller at `addr` answers it.
pub(crate) fn describe_quorum(addr: SocketAddr) -> Result<Quorum> {
    let p = describe_quorum_partition(addr, 1)?;
    let voters = p
        .current_voters
        .iter()
        .map(|v| (v.replica_id, v.log_end_offset, v.last_caught_up_timestamp))
        .collect();
    Ok((p.leader_id, p.leader_epoch, p.high_watermark, voters))
}

/// DescribeQuorum (`version`) of `__cluster_metadata` to the controller at `addr`: its
/// partition's answer, or its error code (a controller that does not lead refuses it).
pub(crate) fn describe_quorum_partition(
    addr: SocketAddr,
    version: i16,
) -> Result<describe_quorum_response::PartitionData> {
    let body = RequestBody::DescribeQuorum(DescribeQuorumRequest {
        topics: vec![describe_quorum_request::TopicData {
            topic_name: "__cluster_metadata".into(),
            partitions: vec![describe_quorum_request::PartitionData {
                partition_index: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::DescribeQuorum(r) = call(addr, version, body, Duration::from_secs(2))? else {
        bail!("not a DescribeQuorum response");
    };
    if r.error_code != 0 {
        bail!("error {}", r.error_code);
    }
    let p = r
        .topics
        .into_iter()
        .next()
        .and_then(|t| t.partitions.into_iter().next())
        .context("no partition")?;
    if p.error_code != 0 {
        bail!("error {}", p.error_code);
    }
    Ok(p)
}

fn read_state(root: &Path) -> Result<Value> {
    let path = cluster_dir(root).join("cluster.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("no cluster is up ({} is missing)", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

fn nodes(state: &Value) -> Vec<Value> {
    state["nodes"].as_array().cloned().unwrap_or_default()
}

fn is_alive(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

/// SIGTERM to every node (brokers first, so they shut down while a controller is there to
/// move their leaderships), SIGKILL to whatever still runs after 30 s.
pub fn down(root: &Path) -> Result<()> {
    let state = read_state(root)?;
    let mut all = nodes(&state);
    all.sort_by_key(|n| n["roles"].as_str() != Some("broker"));
    for node in &all {
        let pid = node["pid"].as_u64().unwrap_or(0);
        if pid > 0 && is_alive(pid) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while is_alive(pid) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            if is_alive(pid) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            }
            println!("stopped node {}", node["id"]);
        }
    }
    std::fs::remove_file(cluster_dir(root).join("cluster.json"))?;
    Ok(())
}

/// The quorum as `kraftd metadata-quorum` describes it, and which nodes run.
pub fn status(root: &Path) -> Result<()> {
    let state = read_state(root)?;
    println!("cluster {}", state["cluster_id"].as_str().unwrap_or("?"));
    let mut controller = None;
    for node in nodes(&state) {
        let pid = node["pid"].as_u64().unwrap_or(0);
        println!(
            "node {} ({}) pid {pid}: {}",
            node["id"],
            node["roles"].as_str().unwrap_or("?"),
            if is_alive(pid) { "running" } else { "stopped" }
        );
        if let Some(p) = node["controller_port"].as_u64() {
            if is_alive(pid) {
                controller.get_or_insert(p);
            }
        }
    }
    let Some(port) = controller else {
        bail!("no controller is running");
    };
    let bin = ["release", "debug"]
        .iter()
        .map(|p| root.join("target").join(p).join("kraftd"))
        .find(|p| p.exists())
        .ok_or_else(|| anyhow!("kraftd is not built"))?;
    for flag in ["--status", "--replication"] {
        let status = Command::new(&bin)
            .args([
                "metadata-quorum",
                "--bootstrap-controller",
                &format!("127.0.0.1:{port}"),
                "describe",
                flag,
            ])
            .status()?;
        if !status.success() {
            bail!("kraftd metadata-quorum failed");
        }
    }
    Ok(())
}

/// Prints a node's log.
pub fn logs(root: &Path, node: u32) -> Result<()> {
    let state = read_state(root)?;
    let entry = nodes(&state)
        .into_iter()
        .find(|n| n["id"].as_u64() == Some(u64::from(node)))
        .ok_or_else(|| anyhow!("no node {node} in this cluster"))?;
    let path = entry["log"].as_str().unwrap_or_default();
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?;
    print!("{text}");
    Ok(())
}

/// `kraftd format --config <config> --cluster-id <id> <extra>...` for one node (cluster-up
/// and the bench; `extra` as `--add-scram ...`).
pub(crate) fn format_node(
    bin: &Path,
    config: &Path,
    cluster_id: &str,
    id: u32,
    extra: &[&str],
) -> Result<()> {
    let status = Command::new(bin)
        .args(["format", "--config"])
        .arg(config)
        .args(["--cluster-id", cluster_id])
        .args(extra)
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        bail!("formatting node {id} failed");
    }
    Ok(())
}

/// `kraftd random-uuid` of the binary `bin`: a new cluster or directory id.
pub fn kraftd_random_uuid(bin: &Path) -> Result<String> {
    let out = Command::new(bin)
        .arg("random-uuid")
        .output()
        .with_context(|| format!("running {} random-uuid", bin.display()))?;
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}
