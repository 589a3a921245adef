//! `kraftd doctor`: seed 003 in one command (D5). It reads every node's `/metrics` twice, a
//! few seconds apart, the Raft leader's DescribeQuorum (voters and observers with their end
//! offsets and last fetch times) and the brokers' view of brokers and partitions
//! (DescribeCluster with the fenced ones, Metadata, DescribeConfigs for `min.insync.replicas`),
//! then prints what is wrong in plain words, most serious first ([`rules`]), or one line
//! saying the cluster is healthy. Exit status: 0 healthy, 1 warnings, 2 critical or the
//! cluster cannot be reached, so scripts can act on it; `--watch` repeats every N seconds,
//! each round compared with the one before.
//!
//! Nodes do not advertise `metrics.port`, so the operator lists the `/metrics` endpoints
//! (`--metrics host:port,...`) and each scrape is mapped to its node by the `node` label.

mod cluster_rules;
pub mod prom;
pub mod rules;

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use kraftd_log::clock::unix_ms;
use kraftd_net::ClientSecurity;
use kraftd_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kraftd_protocol::messages::{DescribeClusterRequest, DescribeConfigsRequest, MetadataRequest};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody};

use crate::metadata_quorum::{self, api_versions, call, channel, error_name};
use crate::properties::Properties;
use rules::{BrokerState, ClusterState, Facts, PartitionState, Round, Severity};

/// `kraftd doctor --bootstrap-controller ... --bootstrap-server ... --metrics ...`.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// Controllers' `host:port`, comma-separated: DescribeQuorum.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT...]")]
    pub bootstrap_controller: Option<String>,
    /// Brokers' `host:port`, comma-separated: brokers, fencing and partitions.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT...]")]
    pub bootstrap_server: Option<String>,
    /// Every node's `/metrics` endpoint (`metrics.port`), comma-separated; each is mapped
    /// to its node by the `node` label of its samples.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT...]")]
    pub metrics: Option<String>,
    /// A client properties file for both bootstraps, as Kafka's tools take it.
    #[arg(long, value_name = "FILE")]
    pub command_config: Option<std::path::PathBuf>,
    /// Milliseconds between the two scrapes a diagnosis compares (growing lags, counters).
    #[arg(long, value_name = "MS", default_value_t = 2_000)]
    pub sample_ms: u64,
    /// Clock skew between two nodes reported above this many ms.
    #[arg(long, value_name = "MS", default_value_t = 1_000)]
    pub max_clock_skew_ms: i64,
    /// Diagnose again every SECONDS (default 5), each round against the one before.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, default_missing_value = "5")]
    pub watch: Option<u64>,
}

/// How long DescribeQuorum is retried while no controller knows a leader.
pub(crate) const LEADER_WAIT: Duration = Duration::from_secs(3);

/// `--bootstrap-server`'s DescribeCluster `EndpointType` for brokers.
const ENDPOINT_TYPE_BROKER: i8 = 1;

/// DescribeConfigs' resource type of a topic.
const TOPIC_RESOURCE: i8 = 2;

/// Runs the command; exits with the diagnosis' status.
pub fn run(args: Args) -> Result<()> {
    let status = match doctor(args) {
        Ok(status) => status,
        Err(e) => {
            eprintln!("Error: {e}");
            2
        }
    };
    std::process::exit(status);
}

fn split(list: &Option<String>) -> Vec<String> {
    list.as_deref()
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(String::from)
        .collect()
}

fn doctor(args: Args) -> Result<i32> {
    let controllers = split(&args.bootstrap_controller);
    let brokers = split(&args.bootstrap_server);
    let metrics = split(&args.metrics);
    if controllers.is_empty() && brokers.is_empty() && metrics.is_empty() {
        bail!("give at least one of --bootstrap-controller, --bootstrap-server, --metrics");
    }
    let security = match &args.command_config {
        Some(path) => metadata_quorum::client_security(&Properties::load(path)?)?,
        None => ClientSecurity::default(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow!("starting the tokio runtime: {e}"))?;
    runtime.block_on(async {
        let mut previous = scrape_all(&metrics).await;
        let mut wait = Duration::from_millis(args.sample_ms);
        loop {
            let quorum = async {
                if controllers.is_empty() {
                    None
                } else {
                    Some(
                        metadata_quorum::describe(&controllers, &security, LEADER_WAIT)
                            .await
                            .map_err(|e| e.to_string()),
                    )
                }
            };
            let cluster = async {
                if brokers.is_empty() {
                    None
                } else {
                    Some(cluster_state(&brokers, &security).await)
                }
            };
            let second = async {
                tokio::time::sleep(wait).await;
                scrape_all(&metrics).await
            };
            let (quorum, cluster, second) = tokio::join!(quorum, cluster, second);
            let facts = Facts {
                first: previous,
                second,
                quorum,
                cluster,
                max_clock_skew_ms: args.max_clock_skew_ms,
            };
            let findings = rules::diagnose(&facts);
            let status = if findings.iter().any(|f| f.severity == Severity::Critical) {
                2
            } else if findings.is_empty() {
                0
            } else {
                1
            };
            if args.watch.is_some() {
                println!("--- {} ---", iso_time(facts.second.at_ms));
            }
            if findings.is_empty() {
                println!("{}", rules::healthy_line(&facts));
            }
            for f in &findings {
                let tag = match f.severity {
                    Severity::Critical => "CRITICAL",
                    Severity::Warning => "WARNING",
                };
                println!("{tag}: {}", f.text);
            }
            let Some(every) = args.watch else {
                return Ok(status);
            };
            previous = facts.second;
            wait = Duration::from_secs(every.max(1));
        }
    })
}

/// `YYYY-MM-DDTHH:MM:SSZ` of Unix ms (the doctor's own clock).
fn iso_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil-from-days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Scrapes every endpoint at once (the doctor's rounds, and the console's health page).
pub(crate) async fn scrape_all(addresses: &[String]) -> Round {
    let mut tasks = tokio::task::JoinSet::new();
    for (i, address) in addresses.iter().enumerate() {
        let address = address.clone();
        tasks.spawn(async move { (i, address.clone(), prom::scrape(&address).await) });
    }
    let mut results = Vec::new();
    while let Some(done) = tasks.join_next().await {
        if let Ok(r) = done {
            results.push(r);
        }
    }
    results.sort_by_key(|(i, _, _)| *i);
    let mut round = Round {
        at_ms: unix_ms(),
        ..Round::default()
    };
    for (_, address, result) in results {
        match result {
            Ok(s) if round.node(s.node).is_some() => round.errors.push((
                address,
                format!("node {} is already read from another endpoint", s.node),
            )),
            Ok(s) => round.scrapes.push(s),
            Err(e) => round.errors.push((address, e)),
        }
    }
    round
}

/// Brokers and partitions from the first broker that answers.
pub(crate) async fn cluster_state(
    addresses: &[String],
    security: &ClientSecurity,
) -> Result<ClusterState, String> {
    let mut errors = Vec::new();
    for address in addresses {
        match ask_broker(address, security).await {
            Ok(state) => return Ok(state),
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(errors.join("; "))
}

async fn ask_broker(address: &str, security: &ClientSecurity) -> Result<ClusterState> {
    let channel = channel(address, security);
    let versions = api_versions(&channel).await?;
    let mut state = ClusterState::default();
    // DescribeCluster v2 lists the fenced brokers too (KIP-1073); below it, Metadata's
    // brokers (the unfenced) are all there is.
    if let Some(version) = versions.pick(ApiKey::DescribeCluster).filter(|v| *v >= 2) {
        let request = RequestBody::DescribeCluster(DescribeClusterRequest {
            endpoint_type: ENDPOINT_TYPE_BROKER,
            include_fenced_brokers: true,
            ..Default::default()
        });
        let ResponseBody::DescribeCluster(r) = call(&channel, version, request).await? else {
            bail!("{address}: answered DescribeCluster with another response");
        };
        if r.error_code != ErrorCode::None.code() {
            bail!(
                "{address}: DescribeCluster failed: {}",
                error_name(r.error_code)
            );
        }
        state.fenced_listed = true;
        state.brokers = r
            .brokers
            .iter()
            .map(|b| BrokerState {
                id: b.broker_id,
                fenced: b.is_fenced,
            })
            .collect();
    }
    let version = versions
        .pick(ApiKey::Metadata)
        .ok_or_else(|| anyhow!("{address}: does not serve Metadata at a version kraftd speaks"))?;
    let request = RequestBody::Metadata(MetadataRequest {
        topics: None,
        ..Default::default()
    });
    let ResponseBody::Metadata(metadata) = call(&channel, version, request).await? else {
        bail!("{address}: answered Metadata with another response");
    };
    if !state.fenced_listed {
        state.brokers = metadata
            .brokers
            .iter()
            .map(|b| BrokerState {
                id: b.node_id,
                fenced: false,
            })
            .collect();
    }
    let topics: Vec<String> = metadata
        .topics
        .iter()
        .filter(|t| t.error_code == ErrorCode::None.code())
        .filter_map(|t| t.name.clone())
        .collect();
    let min_isr = min_insync_replicas(&channel, &versions, &topics)
        .await
        .unwrap_or_default();
    for t in &metadata.topics {
        let Some(name) = &t.name else { continue };
        for p in &t.partitions {
            state.partitions.push(PartitionState {
                topic: name.clone(),
                partition: p.partition_index,
                leader: p.leader_id,
                replicas: p.replica_nodes.clone(),
                isr: p.isr_nodes.clone(),
                min_isr: min_isr.get(name).copied(),
            });
        }
    }
    Ok(state)
}

/// Each topic's `min.insync.replicas`, in one DescribeConfigs.
async fn min_insync_replicas(
    channel: &kraftd_net::Channel,
    versions: &metadata_quorum::Versions,
    topics: &[String],
) -> Result<std::collections::BTreeMap<String, usize>> {
    let mut out = std::collections::BTreeMap::new();
    let Some(version) = versions.pick(ApiKey::DescribeConfigs) else {
        return Ok(out);
    };
    if topics.is_empty() {
        return Ok(out);
    }
    let request = RequestBody::DescribeConfigs(DescribeConfigsRequest {
        resources: topics
            .iter()
            .map(|t| DescribeConfigsResource {
                resource_type: TOPIC_RESOURCE,
                resource_name: t.clone(),
                configuration_keys: Some(vec!["min.insync.replicas".into()]),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    });
    let ResponseBody::DescribeConfigs(r) = call(channel, version, request).await? else {
        bail!("answered DescribeConfigs with another response");
    };
    for result in r.results {
        if result.error_code != ErrorCode::None.code() {
            continue;
        }
        let value = result
            .configs
            .iter()
            .find(|c| c.name == "min.insync.replicas")
            .and_then(|c| c.value.as_deref()?.parse().ok());
        if let Some(v) = value {
            out.insert(result.resource_name, v);
        }
    }
    Ok(out)
}
