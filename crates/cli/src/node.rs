//! Running a node: checks the formatted directories, builds the controller's and the
//! broker's configs from Kafka's property names, starts the roles `process.roles` names (a
//! combined node shares one Raft voter between them), and shuts down gracefully on SIGTERM or
//! Ctrl-C: the broker's controlled shutdown first (leaderships move away, clean-shutdown
//! markers last), then the controller (a leader resigns, so the quorum elects at once).

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use kraftd_broker::replica::log_cleaner::LogCleanerConfig;
use kraftd_broker::server::{BrokerConfig, BrokerListener, BrokerServer, RaftSource};
use kraftd_controller::auth::{AUTHORIZER_CLASS_NAME_CONFIG, STANDARD_AUTHORIZER_CLASS};
use kraftd_controller::control::DelegationTokenConfig;
use kraftd_controller::node::{ControllerNode, ControllerNodeConfig};
use kraftd_controller::publisher::AuthorizerConfig;
use kraftd_coordinator::group::GroupCoordinatorConfig;
use kraftd_coordinator::share::ShareCoordinatorConfig;
use kraftd_coordinator::transaction::TransactionCoordinatorConfig;
use kraftd_raft::driver::QuorumConfig;
use tracing::info;

use crate::config::{NodeConfig, ProcessRole};
use crate::connection_quotas::{connection_quota_config, ConnectionQuotasReconfigurer};
use crate::format;
use crate::security::tls::TlsReconfigurer;

/// kraftd's switch for the request metrics (default true): `false` records no per-request
/// metrics at all (Kafka has no such switch: `metrics.recording.level` leaves them on), for
/// measuring their cost (`cargo xtask bench request-metrics`).
pub const REQUEST_METRICS_ENABLE: &str = "request.metrics.enable";

/// The metadata log's directory name inside `metadata.log.dir`.
pub const METADATA_LOG_DIR_NAME: &str = "__cluster_metadata-0";

/// Runs the node until SIGTERM or Ctrl-C. `on_ready` runs once every role has started and,
/// on a broker, once its client listeners accept connections (caught up and unfenced): the
/// embedded default prints the bootstrap address there, so a script that waits for that
/// line can use the cluster at once.
pub fn run(
    config: NodeConfig,
    config_file: &str,
    on_ready: impl FnOnce(&NodeConfig),
) -> Result<()> {
    for key in config.unknown_keys() {
        tracing::warn!(
            "{key} in {config_file} is not a Kafka 4.4 setting nor one of kraftd's: ignored"
        );
    }
    // A bad authorizer refuses startup before anything is touched.
    let authorizer = authorizer_config(&config)?;
    let formatted = format::check_formatted(&config, config_file)?;
    let cluster_id = formatted.cluster_id.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("kraftd")
        .build()
        .context("starting the tokio runtime")?;
    // One registry for every listener of the process, both roles'.
    let request_metrics = std::sync::Arc::new(kraftd_net::RequestMetrics::new(
        config.boolean(REQUEST_METRICS_ENABLE, true)?,
    ));
    runtime.block_on(async move {
        // Each role's connection quotas, for `/metrics`.
        let mut connection_quotas = Vec::new();
        let mut controller = None;
        if config.is_controller() {
            let bootstrap = format::read_bootstrap(&config.metadata_log_dir)?;
            let mut node_config = controller_config(&config, &formatted, bootstrap)?;
            node_config.colocated_broker = config.roles.contains(&ProcessRole::Broker);
            let listener = config
                .controller_listener()
                .ok_or_else(|| anyhow!("no controller listener"))?
                .clone();
            let bind = listener.bind_address();
            let socket = tokio::net::TcpListener::bind(&bind)
                .await
                .with_context(|| format!("binding listener {} to {bind}", listener.name))?;
            node_config.server.security = config.listener_security(&listener);
            node_config.server.metrics = std::sync::Arc::clone(&request_metrics);
            connection_quotas.push(std::sync::Arc::clone(&node_config.server.connection_quotas));
            let node = ControllerNode::start(node_config, socket)
                .await
                .context("starting the controller")?;
            info!(node = config.node_id, %bind, cluster = %cluster_id, "controller started");
            controller = Some(node);
        }
        let mut broker = None;
        if config.roles.contains(&ProcessRole::Broker) {
            let raft = match controller.as_mut() {
                Some(node) => RaftSource::Shared {
                    handle: node.raft().clone(),
                    events: node
                        .take_broker_events()
                        .ok_or_else(|| anyhow!("the controller keeps no events for a broker"))?,
                },
                None => RaftSource::Observer,
            };
            let mut broker_config = broker_config(&config, &formatted)?;
            broker_config.server.metrics = std::sync::Arc::clone(&request_metrics);
            connection_quotas.push(std::sync::Arc::clone(
                &broker_config.server.connection_quotas,
            ));
            let mut listeners = Vec::new();
            for (listener, advertised) in config.broker_listeners() {
                let bind = listener.bind_address();
                listeners.push(
                    BrokerListener::bind(
                        listener.name.clone(),
                        config.listener_security(&listener),
                        &bind,
                        advertised.host.clone(),
                        advertised.port,
                    )
                    .await
                    .with_context(|| format!("binding listener {} to {bind}", listener.name))?,
                );
            }
            let server = BrokerServer::start(broker_config, raft, listeners)
                .await
                .context("starting the broker")?;
            info!(node = config.node_id, cluster = %cluster_id, "broker started");
            broker = Some(server);
        }
        let _metrics = match config.props.get("metrics.port") {
            Some(port) => {
                let port: u16 = port.trim().parse().map_err(|_| {
                    anyhow!(
                        "invalid value {port:?} for metrics.port in {}: expected a port number",
                        config.props.source()
                    )
                })?;
                let host = config
                    .props
                    .get("metrics.host")
                    .map(str::to_string)
                    .or_else(|| config.listeners.first().map(|l| l.host.clone()))
                    .unwrap_or_default();
                let bind = crate::config::Listener {
                    name: "METRICS".into(),
                    host,
                    port,
                }
                .bind_address();
                let socket = tokio::net::TcpListener::bind(&bind)
                    .await
                    .with_context(|| format!("binding metrics.port to {bind}"))?;
                let raft = match (&controller, &broker) {
                    (Some(c), _) => c.raft().metrics(),
                    (None, Some(b)) => b.raft_metrics(),
                    (None, None) => return Err(anyhow!("no role to export metrics of")),
                };
                let broker_metrics = broker.as_ref().map(|b| b.metadata_metrics().clone());
                let replica_manager = broker
                    .as_ref()
                    .map(|b| std::sync::Arc::clone(b.replica_manager()));
                let log_cleaner = broker.as_ref().and_then(|b| b.log_cleaner_metrics());
                let groups = broker
                    .as_ref()
                    .map(|b| std::sync::Arc::clone(b.group_coordinator()));
                let quotas = broker.as_ref().map(|b| std::sync::Arc::clone(b.quotas()));
                let client_metrics = broker
                    .as_ref()
                    .map(|b| std::sync::Arc::clone(b.client_metrics()));
                let share_partitions = broker
                    .as_ref()
                    .and_then(|b| b.share_partition_manager().cloned());
                let mutation_quotas = controller.as_ref().map(|c| c.mutation_quotas().clone());
                let controller_metrics = controller.as_ref().map(|c| c.metrics().clone());
                let node_id = config.node_id;
                let request_metrics = std::sync::Arc::clone(&request_metrics);
                let render: std::sync::Arc<dyn Fn() -> String + Send + Sync> =
                    std::sync::Arc::new(move || {
                        let mut out = String::new();
                        raft.borrow().write_prometheus(node_id, &mut out);
                        // The node's wall clock, for `kraftd doctor`'s clock-skew rule.
                        kraftd_raft::driver::metrics::write_prometheus_metric(
                            &mut out,
                            "kraftd",
                            "wall_clock_ms",
                            "gauge",
                            "This node's wall clock (Unix ms) when it rendered this page.",
                            node_id,
                            kraftd_log::clock::unix_ms(),
                        );
                        request_metrics.write_prometheus(node_id, &mut out);
                        kraftd_net::connection_quotas::write_prometheus(
                            &connection_quotas,
                            node_id,
                            &mut out,
                        );
                        if let Some(metrics) = &broker_metrics {
                            let now = kraftd_log::clock::unix_ms();
                            metrics.values(now).write_prometheus(node_id, &mut out);
                        }
                        if let Some(replicas) = &replica_manager {
                            replicas.write_prometheus(node_id, &mut out);
                            replicas.write_log_prometheus(node_id, &mut out);
                        }
                        if let Some(cleaner) = &log_cleaner {
                            cleaner.write_prometheus(node_id, &mut out);
                        }
                        if let Some(groups) = &groups {
                            groups.metrics().write_prometheus(node_id, &mut out);
                        }
                        if let Some(quotas) = &quotas {
                            quotas.write_prometheus(node_id, &mut out);
                        }
                        if let Some(shares) = &share_partitions {
                            shares.write_prometheus(node_id, &mut out);
                        }
                        if let Some(telemetry) = &client_metrics {
                            let now = kraftd_log::clock::unix_ms().max(0) as u64;
                            telemetry.write_prometheus(node_id, now, &mut out);
                        }
                        if let Some(quotas) = &mutation_quotas {
                            quotas.write_prometheus(node_id, &mut out);
                        }
                        if let Some(metrics) = &controller_metrics {
                            let now = kraftd_log::clock::unix_ms();
                            metrics.write_prometheus(node_id, now, &mut out);
                        }
                        crate::process_metrics::write_prometheus(node_id, &mut out);
                        out
                    });
                let console = crate::console::config::node_console(
                    &config,
                    &cluster_id,
                    authorizer.enabled,
                    broker.as_ref(),
                    controller.as_ref(),
                    std::sync::Arc::clone(&render),
                )?
                .map(std::sync::Arc::new);
                Some(tokio::spawn(crate::metrics_http::serve(
                    socket, render, console,
                )))
            }
            None => None,
        };
        let mut on_ready = Some(on_ready);
        let mut serving = broker.as_ref().map(BrokerServer::serving);
        if serving.is_none() {
            if let Some(ready) = on_ready.take() {
                ready(&config);
            }
        }
        let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        let mut status = controller.as_ref().map(ControllerNode::status);
        let mut broker_stopped = broker.as_ref().map(BrokerServer::stopped);
        let fatal = loop {
            tokio::select! {
                _ = sigterm.recv() => break None,
                _ = tokio::signal::ctrl_c() => break None,
                ready = async {
                    match serving.as_mut() {
                        Some(s) => s.wait_for(|serving| *serving).await.is_ok(),
                        None => std::future::pending().await,
                    }
                }, if on_ready.is_some() => {
                    if ready {
                        info!(node = config.node_id, "broker listeners accepting connections");
                        if let Some(ready) = on_ready.take() {
                            ready(&config);
                        }
                    } else {
                        serving = None;
                    }
                }
                reason = async {
                    match broker_stopped.as_mut() {
                        Some(s) => s.wait_for(Option::is_some).await.ok().and_then(|r| r.clone()),
                        None => std::future::pending().await,
                    }
                } => break Some(reason.unwrap_or_else(|| "the broker stopped".to_string())),
                changed = async {
                    match status.as_mut() {
                        Some(s) => s.changed().await.is_ok(),
                        None => std::future::pending().await,
                    }
                } => {
                    if !changed {
                        break Some("the controller stopped".to_string());
                    }
                    if let Some(reason) = status.as_ref().and_then(|s| s.borrow().fatal.clone()) {
                        break Some(reason);
                    }
                }
            }
        };
        info!(node = config.node_id, "shutting down");
        if let Some(broker) = broker {
            broker.shutdown().await;
        }
        if let Some(node) = controller {
            node.shutdown().await.context("shutting down")?;
        }
        match fatal {
            Some(reason) => Err(anyhow!("stopped: {reason}")),
            None => Ok(()),
        }
    })
}

/// Kafka's property names → the broker's settings. `formatted`: the directories as
/// [`format::check_formatted`] read them; the log dirs whose `meta.properties` could not be
/// read are offline from the start.
fn broker_config(config: &NodeConfig, formatted: &format::Formatted) -> Result<BrokerConfig> {
    let cluster_id = formatted.cluster_id.as_str();
    let mut log_dirs = Vec::new();
    let mut offline_log_dirs = Vec::new();
    for dir in &config.log_dirs {
        if let Some((_, error)) = formatted.unreadable.iter().find(|(d, _)| d == dir) {
            offline_log_dirs.push((dir.clone(), error.clone()));
            continue;
        }
        let directory_id = formatted
            .directory_id(dir)?
            .ok_or_else(|| anyhow!("log directory {} is not formatted", dir.display()))?;
        log_dirs.push((dir.clone(), directory_id));
    }
    if log_dirs.is_empty() {
        // Kafka's `LogManager.createAndValidateLogDirs` halts the broker the same way.
        bail!(
            "Shutdown broker because none of the specified log dirs from {} can be created or validated",
            config
                .log_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    // An observer fetches with its directory id too, as Kafka's brokers do: `describe
    // --status` lists it with one (KIP-853).
    let quorum = quorum_config(config, formatted)?;
    let listener_names: Vec<String> = config
        .broker_listeners()
        .into_iter()
        .map(|(l, _)| l.name)
        .collect();
    let (server, connection_quotas) = server_config(config, &listener_names)?;
    server
        .connection_quotas
        .set_inter_broker_listener(config.inter_broker_listener_name());
    let mut reconfigurables = tls_reconfigurables(config);
    reconfigurables.push(connection_quotas);
    // The process's pool of open segment files (kraftd's own settings; Kafka has none).
    kraftd_log::handles::configure(
        config.number(
            "log.segment.open.files.max",
            kraftd_log::config::DEFAULT_SEGMENT_OPEN_FILES_MAX,
        )?,
        config.number(
            "log.segment.idle.close.ms",
            kraftd_log::config::DEFAULT_SEGMENT_IDLE_CLOSE_MS,
        )?,
    );
    // The properties file as written: DescribeConfigs' static values and the coordinators'
    // settings.
    let properties = static_properties(config);
    Ok(BrokerConfig {
        node_id: config.node_id,
        cluster_id: cluster_id.to_string(),
        quorum,
        log_dirs,
        offline_log_dirs,
        rack: config.props.get("broker.rack").map(str::to_string),
        heartbeat_interval: Duration::from_millis(config.number(
            "broker.heartbeat.interval.ms",
            kraftd_broker::server::lifecycle::BROKER_HEARTBEAT_INTERVAL_MS_DEFAULT,
        )?),
        // Kafka's INT without a lower bound; a negative value waits not at all.
        controller_socket_timeout: Duration::from_millis(
            config
                .number::<i32>("controller.socket.timeout.ms", 30_000)?
                .max(0) as u64,
        ),
        server,
        static_configs: properties.clone(),
        auto_create_topics_enable: config.boolean("auto.create.topics.enable", true)?,
        authorizer: authorizer_config(config)?,
        delegation_tokens: delegation_token_config(config)?,
        replica_lag_time_max_ms: config.defined(
            "replica.lag.time.max.ms",
            kraftd_broker::replica::partition::DEFAULT_REPLICA_LAG_TIME_MAX_MS,
        )?,
        max_incremental_fetch_session_cache_slots: config.defined(
            "max.incremental.fetch.session.cache.slots",
            kraftd_broker::replica::fetch_session::DEFAULT_MAX_SLOTS,
        )?,
        inter_broker_listener_name: config
            .props
            .get("inter.broker.listener.name")
            .map(str::to_string),
        inter_broker_security: config
            .inter_broker_listener_name()
            .map(|name| config.client_security(&name))
            .unwrap_or_default(),
        controller_security: config
            .controller_listener_names
            .first()
            .map(|name| config.client_security(name))
            .unwrap_or_default(),
        log_cleaner: log_cleaner_config(config)?,
        // `group.*` and `offsets.*`, `transaction.*` and `transactional.id.*`: Kafka's
        // defaults where unset.
        group_coordinator: GroupCoordinatorConfig::from_properties(&properties)
            .map_err(|e| anyhow!("{e}"))?,
        transaction_coordinator: TransactionCoordinatorConfig::from_properties(&properties)
            .map_err(|e| anyhow!("{e}"))?,
        share_group: kraftd_broker::share::share_group_config::ShareGroupConfig::from_properties(
            &properties,
        )
        .map_err(|e| anyhow!("{e}"))?,
        // `share.coordinator.*`: Kafka's defaults where unset.
        share_coordinator: ShareCoordinatorConfig::from_properties(&properties)
            .map_err(|e| anyhow!("{e}"))?,
        reconfigurables,
    })
}

/// A [`TlsReconfigurer`] for every TLS listener this node serves: its stores change with
/// this broker's dynamic `listener.name.<l>.ssl.*` configs.
fn tls_reconfigurables(
    config: &NodeConfig,
) -> Vec<std::sync::Arc<dyn kraftd_controller::publisher::Reconfigurable>> {
    let inter_broker = config.inter_broker_listener_name();
    config
        .tls
        .servers
        .iter()
        .map(|(listener, server)| {
            let protocol = config
                .security_protocols
                .get(listener)
                .copied()
                .unwrap_or_default();
            std::sync::Arc::new(TlsReconfigurer::new(
                &config.props,
                listener,
                protocol,
                server.clone(),
                config.tls.clients.get(listener).cloned(),
                inter_broker.as_deref() == Some(listener.as_str()),
            )) as std::sync::Arc<dyn kraftd_controller::publisher::Reconfigurable>
        })
        .collect()
}

/// `log.cleaner.enable` and the `log.cleaner.*` sizes, Kafka's defaults where unset.
fn log_cleaner_config(config: &NodeConfig) -> Result<LogCleanerConfig> {
    let d = LogCleanerConfig::default();
    let c = &d.cleaner;
    Ok(LogCleanerConfig {
        enable: config.boolean("log.cleaner.enable", d.enable)?,
        cleaner: kraftd_log::cleaner::CleanerConfig {
            threads: config.number("log.cleaner.threads", c.threads)?,
            dedupe_buffer_size: config
                .number("log.cleaner.dedupe.buffer.size", c.dedupe_buffer_size)?,
            io_buffer_load_factor: config
                .number("log.cleaner.io.buffer.load.factor", c.io_buffer_load_factor)?,
            io_buffer_size: config.number("log.cleaner.io.buffer.size", c.io_buffer_size)?,
            io_max_bytes_per_second: config.number(
                "log.cleaner.io.max.bytes.per.second",
                c.io_max_bytes_per_second,
            )?,
            backoff_ms: config.number("log.cleaner.backoff.ms", c.backoff_ms)?,
        },
    })
}

/// Kafka's `DelegationTokenManagerConfigs`: tokens on with a non-empty
/// `delegation.token.secret.key`, their lifetimes and the controller's sweep interval, each
/// checked by Kafka's validator (at least 1 ms).
fn delegation_token_config(config: &NodeConfig) -> Result<DelegationTokenConfig> {
    let defaults = DelegationTokenConfig::default();
    Ok(DelegationTokenConfig {
        secret_key: config
            .props
            .get("delegation.token.secret.key")
            .map(str::to_string)
            .filter(|k| !k.is_empty()),
        max_lifetime_ms: config
            .defined("delegation.token.max.lifetime.ms", defaults.max_lifetime_ms)?,
        expiry_time_ms: config
            .defined("delegation.token.expiry.time.ms", defaults.expiry_time_ms)?,
        expiry_check_interval_ms: config.defined(
            "delegation.token.expiry.check.interval.ms",
            defaults.expiry_check_interval_ms,
        )?,
    })
}

/// `authorizer.class.name`, `super.users` and `allow.everyone.if.no.acl.found`. The class is
/// empty (Kafka's default: no authorizer) or Kafka's StandardAuthorizer; any other class
/// (Kafka 3's `kafka.security.authorizer.AclAuthorizer`, a custom one) refuses startup.
fn authorizer_config(config: &NodeConfig) -> Result<AuthorizerConfig> {
    let class = config
        .props
        .get(AUTHORIZER_CLASS_NAME_CONFIG)
        .map(str::trim)
        .unwrap_or("");
    let enabled = match class {
        "" => false,
        STANDARD_AUTHORIZER_CLASS => true,
        other => bail!(
            "unsupported value {other:?} for {AUTHORIZER_CLASS_NAME_CONFIG} in {}: kraftd runs \
             only {STANDARD_AUTHORIZER_CLASS} (or no authorizer, when empty)",
            config.props.source()
        ),
    };
    Ok(AuthorizerConfig {
        enabled,
        super_users: config
            .props
            .get("super.users")
            .map(AuthorizerConfig::parse_super_users)
            .unwrap_or_default(),
        allow_everyone_if_no_acl_found: config.boolean("allow.everyone.if.no.acl.found", false)?,
    })
}

/// A role's listeners' limits: `socket.request.max.bytes`, `connections.max.idle.ms`, and
/// the role's connection quotas (`max.connections` and the rest, with `quota.window.*`)
/// for `listeners`, and the [`ConnectionQuotasReconfigurer`] that keeps them current.
fn server_config(
    config: &NodeConfig,
    listeners: &[String],
) -> Result<(
    kraftd_net::ServerConfig,
    std::sync::Arc<dyn kraftd_controller::publisher::Reconfigurable>,
)> {
    let mut server = kraftd_net::ServerConfig::default();
    server.max_frame_bytes = config.number("socket.request.max.bytes", server.max_frame_bytes)?;
    server.connections_max_idle = Duration::from_millis(config.number(
        "connections.max.idle.ms",
        server.connections_max_idle.as_millis() as u64,
    )?);
    let limits = connection_quota_config(&config.props, listeners, false)
        .map_err(|e| anyhow!("{e} (in {})", config.props.source()))?;
    let window =
        kraftd_controller::quota::QuotaWindow::from_properties(&static_properties(config), "")
            .map_err(|e| anyhow!("{e} (in {})", config.props.source()))?;
    server.connection_quotas =
        kraftd_net::connection_quotas::ConnectionQuotas::new(limits, window.sample_config());
    let reconfigurer = ConnectionQuotasReconfigurer::new(
        &config.props,
        listeners.to_vec(),
        std::sync::Arc::clone(&server.connection_quotas),
    );
    Ok((server, std::sync::Arc::new(reconfigurer)))
}

/// The quorum as both roles take part in it: `controller.quorum.voters` and
/// `controller.quorum.bootstrap.servers`, the `controller.quorum.*` timeouts, and the
/// metadata log's directory with its `directory.id` (KIP-853) as `formatted` read it.
fn quorum_config(config: &NodeConfig, formatted: &format::Formatted) -> Result<QuorumConfig> {
    let mut quorum = QuorumConfig::new(
        &formatted.cluster_id,
        config.voters.clone(),
        config.metadata_log_dir.join(METADATA_LOG_DIR_NAME),
    );
    quorum.bootstrap_servers = config.bootstrap_servers.clone();
    raft_timeouts(config, &mut quorum.raft)?;
    // The metadata log directory's `directory.id`: the node's replica directory id in the
    // quorum, a voter's key.
    if let Some(id) = formatted.directory_id(&config.metadata_log_dir)? {
        quorum.raft.directory_id = id;
    }
    Ok(quorum)
}

/// `controller.quorum.*` timeouts.
fn raft_timeouts(config: &NodeConfig, r: &mut kraftd_raft::RaftConfig) -> Result<()> {
    r.election_timeout_ms = config.defined(
        "controller.quorum.election.timeout.ms",
        r.election_timeout_ms,
    )?;
    r.fetch_timeout_ms =
        config.defined("controller.quorum.fetch.timeout.ms", r.fetch_timeout_ms)?;
    r.election_backoff_max_ms = config.defined(
        "controller.quorum.election.backoff.max.ms",
        r.election_backoff_max_ms,
    )?;
    r.request_timeout_ms =
        config.defined("controller.quorum.request.timeout.ms", r.request_timeout_ms)?;
    r.retry_backoff_ms =
        config.defined("controller.quorum.retry.backoff.ms", r.retry_backoff_ms)?;
    r.append_linger_ms =
        config.defined("controller.quorum.append.linger.ms", r.append_linger_ms)?;
    Ok(())
}

/// The controller listeners as advertised (`advertised.listeners` by name, else
/// `listeners`; an empty host is `localhost`), with their security protocol ids: what the
/// controller registers (KIP-919).
fn controller_registration_listeners(config: &NodeConfig) -> Vec<(String, String, u16, i16)> {
    config
        .listeners
        .iter()
        .filter(|l| config.controller_listener_names.contains(&l.name))
        .map(|l| {
            let advertised = config
                .advertised_listeners
                .iter()
                .find(|a| a.name == l.name)
                .unwrap_or(l);
            let host = if advertised.host.is_empty() {
                "localhost".to_string()
            } else {
                advertised.host.clone()
            };
            let protocol = config.client_security(&l.name).protocol.id();
            (l.name.clone(), host, advertised.port, protocol)
        })
        .collect()
}

/// The feature ranges a kraftd controller supports: the broker's (`kraft.version` 0-1
/// among them).
fn controller_supported_features() -> Vec<(String, i16, i16)> {
    kraftd_broker::server::supported_features()
        .into_iter()
        .map(|f| (f.name, f.min_supported_version, f.max_supported_version))
        .collect()
}

/// The node's properties file as written, key to value: what DescribeConfigs reports as
/// STATIC_BROKER_CONFIG on brokers and controllers alike.
fn static_properties(config: &NodeConfig) -> std::collections::BTreeMap<String, String> {
    config
        .props
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Kafka's property names → the controller node's settings, for the directories
/// `formatted` read.
fn controller_config(
    config: &NodeConfig,
    formatted: &format::Formatted,
    bootstrap: Vec<kraftd_protocol::MetadataRecord>,
) -> Result<ControllerNodeConfig> {
    let mut log_config = kraftd_log::LogConfig::metadata_log();
    for (kafka_name, store_name) in [
        ("metadata.log.segment.bytes", "segment.bytes"),
        ("internal.metadata.log.segment.bytes", "segment.bytes"),
        ("metadata.log.segment.ms", "segment.ms"),
    ] {
        if let Some(value) = config.props.get(kafka_name) {
            log_config.set(store_name, value).map_err(|e| {
                anyhow!(
                    "invalid value {value:?} for {kafka_name} in {}: {e}",
                    config.props.source()
                )
            })?;
        }
    }
    // KIP-853: the metadata log directory's `directory.id` is this controller's voter key.
    let mut c = ControllerNodeConfig::new(config.node_id, quorum_config(config, formatted)?);
    c.log_config = log_config;
    c.bootstrap_records = bootstrap;
    c.static_configs = static_properties(config);
    // A combined node's broker already reconfigures every TLS listener of the process.
    if !config.roles.contains(&ProcessRole::Broker) {
        c.reconfigurables = tls_reconfigurables(config);
    }
    if let Some(name) = config.controller_listener_names.first() {
        c.controller_listener_name = name.clone();
    }
    c.quorum.raft.auto_join = config.boolean("controller.quorum.auto.join.enable", false)?;
    // KIP-853: the controller listener this node names itself by in a voter set (advertised,
    // else bound with a host).
    if let Some(name) = config.controller_listener_names.first() {
        let own = config
            .advertised_listeners
            .iter()
            .chain(config.listeners.iter())
            .find(|l| &l.name == name && !l.host.is_empty());
        if let Some(l) = own {
            c.quorum.raft.local_listeners.insert(
                name.clone(),
                kraftd_raft::core::endpoints::Endpoint {
                    host: l.host.clone(),
                    port: l.port,
                },
            );
        }
    }
    let (server, connection_quotas) = server_config(config, &config.controller_listener_names)?;
    c.server = server;
    c.reconfigurables.push(connection_quotas);
    c.client_security = config
        .controller_listener_names
        .first()
        .map(|name| config.client_security(name))
        .unwrap_or_default();
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
    // Kafka's controller checks a group's configs against its own group.* bounds.
    for (key, default) in kraftd_controller::control::config_defs::GROUP_CONFIG_BOUNDS {
        let value = config.number(key, *default)?;
        m.group_bounds.set(key, value);
    }
    if let Some(assignors) = config.props.get("group.streams.assignors") {
        m.group_bounds.streams_assignors = assignors
            .split(',')
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .map(str::to_string)
            .collect();
    }
    m.delegation_tokens = delegation_token_config(config)?;
    c.authorizer = authorizer_config(config)?;
    c.registration_listeners = controller_registration_listeners(config);
    c.supported_features = controller_supported_features();
    c.metadata_max_idle_interval_ms = config.defined(
        "metadata.max.idle.interval.ms",
        c.metadata_max_idle_interval_ms,
    )?;
    c.delete_topic_enable = config.defined("delete.topic.enable", true)?;
    c.mutation_quota_window = kraftd_controller::quota::QuotaWindow {
        samples: config.defined(
            "controller.quota.window.num",
            c.mutation_quota_window.samples,
        )?,
        size_seconds: config.defined(
            "controller.quota.window.size.seconds",
            c.mutation_quota_window.size_seconds,
        )?,
    };
    // Kafka's ControllerServer: the balancing task runs only while auto.leader.rebalance.enable.
    let check_interval_s: u64 = config.defined(
        "leader.imbalance.check.interval.seconds",
        kraftd_controller::quorum_controller::LEADER_IMBALANCE_CHECK_INTERVAL_MS_DEFAULT / 1000,
    )?;
    c.leader_imbalance_check_interval_ms = config
        .defined("auto.leader.rebalance.enable", true)?
        .then(|| check_interval_s.saturating_mul(1000));
    c.unclean_leader_election_interval_ms = config.defined(
        "unclean.leader.election.interval.ms",
        c.unclean_leader_election_interval_ms,
    )?;
    c.snapshot_max_bytes = config.defined(
        "metadata.log.max.record.bytes.between.snapshots",
        c.snapshot_max_bytes,
    )?;
    c.snapshot_max_interval_ms = config.defined(
        "metadata.log.max.snapshot.interval.ms",
        c.snapshot_max_interval_ms,
    )?;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::properties::Properties;

    const CONTROLLER: &str = "process.roles=controller\nnode.id=1\n\
                              controller.quorum.voters=1@127.0.0.1:9093\n\
                              listeners=CONTROLLER://127.0.0.1:9093\n\
                              controller.listener.names=CONTROLLER\n\
                              log.dirs=/nonexistent/kraftd-test\n";

    fn controller(extra: &str) -> Result<ControllerNodeConfig> {
        let config =
            NodeConfig::from_properties(Properties::parse(&format!("{CONTROLLER}{extra}")))?;
        let formatted = format::Formatted {
            cluster_id: "cluster".into(),
            ..Default::default()
        };
        controller_config(&config, &formatted, Vec::new())
    }

    /// The controller's own periodic tasks and quota sampling take Kafka's settings, with
    /// Kafka's defaults and validators.
    #[test]
    fn controller_settings_of_the_periodic_tasks_and_the_mutation_quota() {
        let c = controller("").unwrap();
        assert_eq!(c.leader_imbalance_check_interval_ms, Some(300_000));
        assert_eq!(c.unclean_leader_election_interval_ms, 300_000);
        assert_eq!(
            c.mutation_quota_window,
            kraftd_controller::quota::QuotaWindow::default()
        );
        let c = controller(
            "leader.imbalance.check.interval.seconds=2\nunclean.leader.election.interval.ms=500\n\
             controller.quota.window.num=3\ncontroller.quota.window.size.seconds=5\n",
        )
        .unwrap();
        assert_eq!(c.leader_imbalance_check_interval_ms, Some(2_000));
        assert_eq!(c.unclean_leader_election_interval_ms, 500);
        assert_eq!(c.mutation_quota_window.samples, 3);
        assert_eq!(c.mutation_quota_window.size_seconds, 5);
        let c = controller("auto.leader.rebalance.enable=FALSE\n").unwrap();
        assert_eq!(c.leader_imbalance_check_interval_ms, None);
        for (bad, key) in [
            (
                "leader.imbalance.check.interval.seconds=0\n",
                "leader.imbalance.check.interval.seconds",
            ),
            (
                "auto.leader.rebalance.enable=yes\n",
                "auto.leader.rebalance.enable",
            ),
            (
                "controller.quota.window.num=0\n",
                "controller.quota.window.num",
            ),
        ] {
            let e = controller(bad).unwrap_err().to_string();
            assert!(e.contains(key) && e.contains("Invalid value"), "{bad}: {e}");
        }
    }
}
