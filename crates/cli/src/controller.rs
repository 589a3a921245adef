//! `kraftd controller`: checks the formatted directories, builds the controller node's
//! config from Kafka's property names, runs it, and shuts down gracefully on SIGTERM or
//! Ctrl-C (a leader resigns first, so the quorum elects without waiting for a timeout).

use anyhow::{anyhow, Context, Result};
use kraftd_controller::node::{ControllerNode, ControllerNodeConfig};
use tracing::info;

use crate::config::NodeConfig;
use crate::format;

/// The metadata log's directory name inside `metadata.log.dir`.
pub const METADATA_LOG_DIR_NAME: &str = "__cluster_metadata-0";

pub fn run(config: NodeConfig, config_file: &str) -> Result<()> {
    if !config.is_controller() {
        anyhow::bail!(
            "process.roles in {config_file} is {:?}; `kraftd controller` needs the controller role",
            config.props.get("process.roles").unwrap_or_default()
        );
    }
    let cluster_id = format::check_formatted(&config, config_file)?;
    let bootstrap = format::read_bootstrap(&config.metadata_log_dir)?;
    let node_config = controller_config(&config, &cluster_id, bootstrap)?;
    let listener = config
        .controller_listener()
        .ok_or_else(|| anyhow!("no controller listener"))?
        .clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("kraftd")
        .build()
        .context("starting the tokio runtime")?;
    runtime.block_on(async move {
        let bind = listener.bind_address();
        let socket = tokio::net::TcpListener::bind(&bind)
            .await
            .with_context(|| format!("binding listener {} to {bind}", listener.name))?;
        let node = ControllerNode::start(node_config, socket)
            .await
            .context("starting the controller")?;
        info!(node = config.node_id, %bind, cluster = %cluster_id, "controller started");
        let mut status = node.status();
        let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        let fatal = loop {
            tokio::select! {
                _ = sigterm.recv() => break None,
                _ = tokio::signal::ctrl_c() => break None,
                changed = status.changed() => {
                    if changed.is_err() {
                        break Some("the controller stopped".to_string());
                    }
                    if let Some(reason) = status.borrow().fatal.clone() {
                        break Some(reason);
                    }
                }
            }
        };
        info!(node = config.node_id, "controller shutting down");
        node.shutdown().await.context("shutting down")?;
        match fatal {
            Some(reason) => Err(anyhow!("controller stopped: {reason}")),
            None => Ok(()),
        }
    })
}

/// Kafka's property names → the controller node's settings.
fn controller_config(
    config: &NodeConfig,
    cluster_id: &str,
    bootstrap: Vec<kraftd_protocol::MetadataRecord>,
) -> Result<ControllerNodeConfig> {
    let mut c = ControllerNodeConfig::new(
        config.node_id,
        cluster_id,
        config.voters.clone(),
        config.metadata_log_dir.join(METADATA_LOG_DIR_NAME),
    );
    c.bootstrap_records = bootstrap;
    for (kafka_name, store_name) in [
        ("metadata.log.segment.bytes", "segment.bytes"),
        ("metadata.log.segment.ms", "segment.ms"),
    ] {
        if let Some(value) = config.props.get(kafka_name) {
            c.log_config.set(store_name, value).map_err(|e| {
                anyhow!(
                    "invalid value {value:?} for {kafka_name} in {}: {e}",
                    config.props.source()
                )
            })?;
        }
    }
    let r = &mut c.raft;
    r.election_timeout_ms = config.number(
        "controller.quorum.election.timeout.ms",
        r.election_timeout_ms,
    )?;
    r.fetch_timeout_ms = config.number("controller.quorum.fetch.timeout.ms", r.fetch_timeout_ms)?;
    r.election_backoff_max_ms = config.number(
        "controller.quorum.election.backoff.max.ms",
        r.election_backoff_max_ms,
    )?;
    r.request_timeout_ms =
        config.number("controller.quorum.request.timeout.ms", r.request_timeout_ms)?;
    r.retry_backoff_ms = config.number("controller.quorum.retry.backoff.ms", r.retry_backoff_ms)?;
    r.append_linger_ms = config.number("controller.quorum.append.linger.ms", r.append_linger_ms)?;
    c.server.max_frame_bytes =
        config.number("socket.request.max.bytes", c.server.max_frame_bytes)?;
    let m = &mut c.managers;
    m.cluster.broker_session_timeout_ms = config.number(
        "broker.session.timeout.ms",
        m.cluster.broker_session_timeout_ms,
    )?;
    m.topics.num_partitions = config.number("num.partitions", m.topics.num_partitions)?;
    m.topics.default_replication_factor = config.number(
        "default.replication.factor",
        m.topics.default_replication_factor,
    )?;
    m.replication.min_insync_replicas =
        config.number("min.insync.replicas", m.replication.min_insync_replicas)?;
    m.replication.unclean_leader_election_enable = config.boolean(
        "unclean.leader.election.enable",
        m.replication.unclean_leader_election_enable,
    )?;
    if let Some(users) = config.props.get("super.users") {
        c.authorizer.super_users =
            kraftd_controller::publisher::AuthorizerConfig::parse_super_users(users);
    }
    c.authorizer.allow_everyone_if_no_acl_found =
        config.boolean("allow.everyone.if.no.acl.found", false)?;
    c.metadata_max_idle_interval_ms = config.number(
        "metadata.max.idle.interval.ms",
        c.metadata_max_idle_interval_ms,
    )?;
    c.snapshot_max_bytes = config.number(
        "metadata.log.max.record.bytes.between.snapshots",
        c.snapshot_max_bytes,
    )?;
    c.snapshot_max_interval_ms = config.number(
        "metadata.log.max.snapshot.interval.ms",
        c.snapshot_max_interval_ms,
    )?;
    Ok(c)
}
