//! `kraftd metadata-quorum`: describes the metadata quorum over DescribeQuorum, in the shape
//! of Kafka's `kafka-metadata-quorum.sh` (`MetadataQuorumCommand`), so an operator reads the
//! same fields, in the same layout, from kraftd as from Kafka.
//!
//! How it finds the answer: only the Raft leader answers DescribeQuorum (others answer
//! NOT_LEADER_OR_FOLLOWER), so every `--bootstrap-controller` address is asked in turn until
//! one answers as leader. Kafka's tool learns the cluster id and the active controller from
//! DescribeCluster; when a controller advertises DescribeCluster (v1+, endpoint type
//! controller) it is used the same way here, and otherwise `ClusterId` reads `unknown`.
//! While the quorum has no leader (an election), it asks again for up to
//! [`LEADER_WAIT`]. Errors are one line naming the address, and the exit status is 1.
//! `add-controller` / `remove-controller` change the voter set (KIP-853): [`voters`].

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use kraftd_log::clock::unix_ms;

use anyhow::{anyhow, bail, Result};
use kraftd_net::{Channel, ClientConfig, ClientSecurity, SecurityProtocol};
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::describe_quorum_request::{PartitionData, TopicData};
use kraftd_protocol::messages::describe_quorum_response::{self, ReplicaState};
use kraftd_protocol::messages::{
    ApiVersionsRequest, ApiVersionsResponse, DescribeClusterRequest, DescribeQuorumRequest,
};
use kraftd_protocol::{ApiKey, ErrorCode, RequestBody, ResponseBody, Uuid};

use crate::properties::Properties;

pub mod voters;

/// `--bootstrap-controller HOST:PORT[,HOST:PORT...] describe [--status|--replication]`.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// A comma-separated list of controllers' `host:port`.
    #[arg(long, value_name = "HOST:PORT[,HOST:PORT...]")]
    pub bootstrap_controller: String,
    /// A client properties file, as Kafka's tool takes it: `security.protocol`,
    /// `sasl.mechanism`, `sasl.jaas.config`, `ssl.truststore.*`, `ssl.keystore.*`.
    #[arg(long, value_name = "FILE")]
    pub command_config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand, Clone, Debug)]
pub enum Command {
    /// Describe the metadata quorum.
    Describe {
        /// A short summary of the quorum status.
        #[arg(long)]
        status: bool,
        /// Detailed information about the status of replication.
        #[arg(long)]
        replication: bool,
        /// With --replication: timestamps as "N ms ago".
        #[arg(long)]
        human_readable: bool,
    },
    /// Add a controller to the KRaft controller cluster: the one --command-config
    /// describes (its node.id, metadata directory id and controller listeners).
    AddController {
        /// Print what would be done, but do not do it.
        #[arg(long)]
        dry_run: bool,
    },
    /// Remove a controller from the KRaft controller cluster.
    RemoveController {
        /// The id of the controller to remove.
        #[arg(long, short = 'i', allow_negative_numbers = true)]
        controller_id: i32,
        /// The directory id of the controller to remove.
        #[arg(long, short = 'd')]
        controller_directory_id: String,
        /// Print what would be done, but do not do it.
        #[arg(long)]
        dry_run: bool,
    },
}

/// How long to keep asking while no controller knows a leader.
pub const LEADER_WAIT: Duration = Duration::from_secs(15);

/// The per-request timeout.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

const CLIENT_ID: &str = "kraftd-metadata-quorum";
const METADATA_TOPIC: &str = "__cluster_metadata";
/// DescribeCluster's `EndpointType` for controllers (KIP-919).
const ENDPOINT_TYPE_CONTROLLER: i8 = 2;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Status,
    Replication { human_readable: bool },
}

/// Runs the subcommand. A failure is printed as one line (`Error: ...`, naming the address
/// when one is involved) and exits with status 1, whatever `RUST_BACKTRACE` says.
pub fn run(args: Args) -> Result<()> {
    let result = match args.command {
        Command::Describe { .. } => describe_command(args),
        _ => voters_command(args),
    };
    if let Err(e) = result {
        eprintln!("Error: {e}");
        std::process::exit(1);
    }
    Ok(())
}

fn describe_command(args: Args) -> Result<()> {
    let Command::Describe {
        status,
        replication,
        human_readable,
    } = args.command
    else {
        unreachable!("run dispatches describe here")
    };
    // Kafka's messages, word for word.
    let mode = match (status, replication) {
        (true, true) => bail!(
            "Only one of --status or --replication should be specified with describe sub-command"
        ),
        (false, false) => {
            bail!("One of --status or --replication must be specified with describe sub-command")
        }
        (true, false) if human_readable => {
            bail!("The option --human-readable is only supported along with --replication")
        }
        (true, false) => Mode::Status,
        (false, true) => Mode::Replication { human_readable },
    };
    let (addresses, security, runtime) = connection(&args)?;
    let quorum = runtime.block_on(describe(&addresses, &security, LEADER_WAIT))?;
    let text = match mode {
        Mode::Status => render_status(&quorum)?,
        Mode::Replication { human_readable } => {
            render_replication(&quorum, human_readable.then(unix_ms))?
        }
    };
    print!("{text}");
    Ok(())
}

/// The `--bootstrap-controller` addresses, the `--command-config` client security, and a
/// runtime to talk to them.
fn connection(args: &Args) -> Result<(Vec<String>, ClientSecurity, tokio::runtime::Runtime)> {
    let addresses: Vec<String> = args
        .bootstrap_controller
        .split(',')
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(String::from)
        .collect();
    if addresses.is_empty() {
        bail!("--bootstrap-controller names no address");
    }
    let security = match &args.command_config {
        Some(path) => client_security(&Properties::load(path)?)?,
        None => ClientSecurity::default(),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow!("starting the tokio runtime: {e}"))?;
    Ok((addresses, security, runtime))
}

/// add-controller / remove-controller ([`voters`]).
fn voters_command(args: Args) -> Result<()> {
    match args.command.clone() {
        Command::AddController { dry_run } => {
            let path = args.command_config.as_ref().ok_or_else(|| {
                anyhow!(
                    "You must supply the configuration file of the controller you are adding \
                     when using add-controller."
                )
            })?;
            if !path.exists() {
                bail!("Properties file {} does not exist.", path.display());
            }
            let joining = voters::joining_controller(&Properties::load(path)?)?;
            if !dry_run {
                let (addresses, security, runtime) = connection(&args)?;
                runtime.block_on(voters::change_voters(
                    &addresses,
                    &security,
                    voters::add_request(&joining),
                ))?;
            }
            println!("{}", voters::added_text(&joining, dry_run));
        }
        Command::RemoveController {
            controller_id,
            controller_directory_id,
            dry_run,
        } => {
            let directory_id = voters::removal_args(controller_id, &controller_directory_id)?;
            if !dry_run {
                let (addresses, security, runtime) = connection(&args)?;
                runtime.block_on(voters::change_voters(
                    &addresses,
                    &security,
                    voters::remove_request(controller_id, directory_id),
                ))?;
            }
            println!(
                "{}",
                voters::removed_text(controller_id, &directory_id, dry_run)
            );
        }
        Command::Describe { .. } => unreachable!("run dispatches describe elsewhere"),
    }
    Ok(())
}

/// What the leader said, with the cluster id when a controller told it.
#[derive(Debug, Clone, PartialEq)]
pub struct Quorum {
    pub cluster_id: Option<String>,
    pub leader_id: i32,
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub voters: Vec<ReplicaState>,
    pub observers: Vec<ReplicaState>,
    /// Endpoints by node id, as `NAME://host:port` (DescribeQuorum v2's `Nodes`).
    pub endpoints: BTreeMap<i32, Vec<String>>,
}

/// One address's answer.
enum Answer {
    Leader(Quorum),
    /// Reachable, but not the leader; `leader_id` is -1 when it knows none.
    NotLeader {
        leader_id: i32,
        epoch: i32,
    },
}

/// Asks each address in turn until one answers as leader; while none knows a leader, again
/// for up to `wait` (`kraftd doctor` waits less than the tool).
pub(crate) async fn describe(
    addresses: &[String],
    security: &ClientSecurity,
    wait: Duration,
) -> Result<Quorum> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let mut errors = Vec::new();
        let mut leaderless = false;
        for address in addresses {
            match ask(address, security).await {
                Ok(Answer::Leader(q)) => return Ok(q),
                Ok(Answer::NotLeader { leader_id, epoch }) => {
                    leaderless |= leader_id < 0;
                    errors.push(if leader_id < 0 {
                        format!("{address}: knows no leader in epoch {epoch}")
                    } else {
                        format!(
                            "{address}: not the leader; the leader is node {leader_id} in epoch \
                             {epoch} (add its address to --bootstrap-controller)"
                        )
                    });
                }
                Err(e) => errors.push(e.to_string()),
            }
        }
        if !leaderless || tokio::time::Instant::now() >= deadline {
            bail!("{}", errors.join("; "));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Asks one address: ApiVersions, DescribeCluster when advertised (the cluster id and the
/// active controller), then DescribeQuorum of the active controller or of the address itself.
async fn ask(address: &str, security: &ClientSecurity) -> Result<Answer> {
    let channel = channel(address, security);
    let versions = api_versions(&channel).await?;
    let mut cluster_id = None;
    let mut target = channel.clone();
    if let Some(version) = versions.pick(ApiKey::DescribeCluster).filter(|v| *v >= 1) {
        let request = RequestBody::DescribeCluster(DescribeClusterRequest {
            endpoint_type: ENDPOINT_TYPE_CONTROLLER,
            ..Default::default()
        });
        if let ResponseBody::DescribeCluster(r) = call(&channel, version, request).await? {
            if r.error_code == ErrorCode::None.code() {
                cluster_id = Some(r.cluster_id.clone());
                let active = r.brokers.iter().find(|b| b.broker_id == r.controller_id);
                if let Some(active) = active {
                    let active_address = format!("{}:{}", active.host, active.port);
                    if active_address != address {
                        target = self::channel(&active_address, security);
                    }
                }
            }
        }
    }
    let target_versions = if target.destination() == address {
        versions
    } else {
        api_versions(&target).await?
    };
    let version = target_versions
        .pick(ApiKey::DescribeQuorum)
        .ok_or_else(|| {
            anyhow!(
                "{}: does not serve DescribeQuorum at a version kraftd speaks",
                target.destination()
            )
        })?;
    let request = RequestBody::DescribeQuorum(DescribeQuorumRequest {
        topics: vec![TopicData {
            topic_name: METADATA_TOPIC.into(),
            partitions: vec![PartitionData {
                partition_index: 0,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::DescribeQuorum(response) = call(&target, version, request).await? else {
        bail!(
            "{}: answered DescribeQuorum with another response",
            target.destination()
        );
    };
    let at = target.destination();
    if response.error_code != ErrorCode::None.code() {
        bail!(
            "{at}: DescribeQuorum failed: {}{}",
            error_name(response.error_code),
            message_suffix(&response.error_message)
        );
    }
    let partition = response
        .topics
        .iter()
        .find(|t| t.topic_name == METADATA_TOPIC)
        .and_then(|t| t.partitions.iter().find(|p| p.partition_index == 0))
        .ok_or_else(|| anyhow!("{at}: DescribeQuorum answered no {METADATA_TOPIC}-0"))?;
    if partition.error_code == ErrorCode::NotLeaderOrFollower.code() {
        return Ok(Answer::NotLeader {
            leader_id: partition.leader_id,
            epoch: partition.leader_epoch,
        });
    }
    if partition.error_code != ErrorCode::None.code() {
        bail!(
            "{at}: DescribeQuorum failed: {}{}",
            error_name(partition.error_code),
            message_suffix(&partition.error_message)
        );
    }
    Ok(Answer::Leader(Quorum {
        cluster_id,
        leader_id: partition.leader_id,
        leader_epoch: partition.leader_epoch,
        high_watermark: partition.high_watermark,
        voters: partition.current_voters.clone(),
        observers: partition.observers.clone(),
        endpoints: endpoints(&response.nodes),
    }))
}

fn endpoints(nodes: &[describe_quorum_response::Node]) -> BTreeMap<i32, Vec<String>> {
    nodes
        .iter()
        .map(|n| {
            let listeners = n
                .listeners
                .iter()
                .map(|l| {
                    // As Kafka's RaftVoterEndpoint prints: IPv6 hosts in brackets.
                    if l.host.contains(':') {
                        format!("{}://[{}]:{}", l.name, l.host, l.port)
                    } else {
                        format!("{}://{}:{}", l.name, l.host, l.port)
                    }
                })
                .collect();
            (n.node_id, listeners)
        })
        .collect()
}

pub(crate) fn error_name(code: i16) -> String {
    ErrorCode::from_code(code).map_or_else(|| format!("error {code}"), |e| e.to_string())
}

fn message_suffix(message: &Option<String>) -> String {
    message
        .as_deref()
        .filter(|m| !m.is_empty())
        .map(|m| format!(": {m}"))
        .unwrap_or_default()
}

/// How the tool reaches a controller listener, from a client properties file: Kafka's
/// client names, so the file given to Kafka's own `kafka-metadata-quorum --command-config`
/// works here too.
pub fn client_security(props: &Properties) -> Result<ClientSecurity> {
    let source = props.source();
    let protocol = match props.get("security.protocol") {
        None => SecurityProtocol::Plaintext,
        Some(v) => SecurityProtocol::from_name(v).ok_or_else(|| {
            anyhow!(
                "invalid value {v:?} for security.protocol in {source}: expected PLAINTEXT, \
                 SSL, SASL_PLAINTEXT or SASL_SSL"
            )
        })?,
    };
    let tls = if protocol.uses_tls() {
        Some(crate::security::tls::client(props, "controller", protocol)?)
    } else {
        None
    };
    let sasl = if protocol.uses_sasl() {
        Some(crate::security::sasl::client_config(
            props,
            "controller",
            "sasl.mechanism",
        )?)
    } else {
        None
    };
    Ok(ClientSecurity {
        protocol,
        tls,
        sasl,
    })
}

pub(crate) fn channel(address: &str, security: &ClientSecurity) -> Channel {
    let config = ClientConfig {
        request_timeout: REQUEST_TIMEOUT,
        security: security.clone(),
        ..ClientConfig::new(CLIENT_ID)
    };
    Channel::spawn(address, config)
}

pub(crate) async fn call(
    channel: &Channel,
    version: i16,
    body: RequestBody,
) -> Result<ResponseBody> {
    channel
        .call(channel.next_correlation_id(), version, body)
        .await
        .map_err(|e| anyhow!("{}: {e}", channel.destination()))
}

/// The versions a node serves.
pub(crate) struct Versions(ApiVersionsResponse);

impl Versions {
    /// The highest version both sides speak.
    pub(crate) fn pick(&self, key: ApiKey) -> Option<i16> {
        let ours = supported_range(key);
        let theirs = self.0.api_keys.iter().find(|k| k.api_key == key.code())?;
        let max = ours.max.min(theirs.max_version);
        (max >= ours.min.max(theirs.min_version)).then_some(max)
    }
}

pub(crate) async fn api_versions(channel: &Channel) -> Result<Versions> {
    let request = || {
        RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: "kraftd".into(),
            client_software_version: env!("CARGO_PKG_VERSION").into(),
            ..Default::default()
        })
    };
    let at = channel.destination();
    let mut version = supported_range(ApiKey::ApiVersions).max;
    for _ in 0..2 {
        let ResponseBody::ApiVersions(r) = call(channel, version, request()).await? else {
            bail!("{at}: answered ApiVersions with another response");
        };
        if r.error_code == ErrorCode::UnsupportedVersion.code() {
            // KIP-511: the node names the ApiVersions versions it speaks; ask again at one.
            match r
                .api_keys
                .iter()
                .find(|k| k.api_key == ApiKey::ApiVersions.code())
            {
                Some(k) if k.max_version < version => {
                    version = k.max_version;
                    continue;
                }
                _ => {}
            }
        }
        if r.error_code != ErrorCode::None.code() {
            bail!("{at}: ApiVersions failed: {}", error_name(r.error_code));
        }
        return Ok(Versions(r));
    }
    bail!("{at}: no ApiVersions version in common")
}

/// `--status`, as Kafka's `handleDescribeStatus` prints it.
pub fn render_status(q: &Quorum) -> Result<String> {
    let leader = leader_of(q)?;
    // Kafka: the voter with the smallest log end offset (the first of equals).
    let lagging = q
        .voters
        .iter()
        .reduce(|a, b| {
            if a.log_end_offset <= b.log_end_offset {
                a
            } else {
                b
            }
        })
        .expect("the leader is a voter");
    let max_lag = leader.log_end_offset - lagging.log_end_offset;
    let max_lag_time_ms = if std::ptr::eq(leader, lagging) {
        0
    } else if leader.last_caught_up_timestamp >= 0 && lagging.last_caught_up_timestamp >= 0 {
        leader.last_caught_up_timestamp - lagging.last_caught_up_timestamp
    } else {
        -1
    };
    let cluster_id = q.cluster_id.clone().unwrap_or_else(|| {
        "unknown (the controllers do not serve DescribeCluster, which carries it)".into()
    });
    let mut out = String::new();
    let mut line = |name: &str, value: &dyn std::fmt::Display| {
        let _ = writeln!(out, "{:<24}{value}", format!("{name}:"));
    };
    line("ClusterId", &cluster_id);
    line("LeaderId", &q.leader_id);
    line("LeaderEpoch", &q.leader_epoch);
    line("HighWatermark", &q.high_watermark);
    line("MaxFollowerLag", &max_lag);
    line("MaxFollowerLagTimeMs", &max_lag_time_ms);
    line("CurrentVoters", &replica_list(q, &q.voters));
    line("CurrentObservers", &replica_list(q, &q.observers));
    Ok(out)
}

/// `[{"id": 1, "directoryId": "…", "endpoints": ["CONTROLLER://host:port"]}, …]`.
fn replica_list(q: &Quorum, replicas: &[ReplicaState]) -> String {
    let items: Vec<String> = replicas
        .iter()
        .map(|r| {
            let mut s = format!("{{\"id\": {}", r.replica_id);
            if r.replica_directory_id != Uuid::ZERO {
                let _ = write!(s, ", \"directoryId\": \"{}\"", r.replica_directory_id);
            }
            if let Some(endpoints) = q.endpoints.get(&r.replica_id).filter(|e| !e.is_empty()) {
                let quoted: Vec<String> = endpoints.iter().map(|e| format!("\"{e}\"")).collect();
                let _ = write!(s, ", \"endpoints\": [{}]", quoted.join(", "));
            }
            s.push('}');
            s
        })
        .collect();
    format!("[{}]", items.join(", "))
}

fn leader_of(q: &Quorum) -> Result<&ReplicaState> {
    q.voters
        .iter()
        .find(|v| v.replica_id == q.leader_id)
        .ok_or_else(|| anyhow!("the leader {} is not among the voters", q.leader_id))
}

/// `--replication`, as Kafka's `handleDescribeReplication` prints it: the leader, the other
/// voters, then the observers. `now_ms` turns timestamps into "N ms ago" (--human-readable).
pub fn render_replication(q: &Quorum, now_ms: Option<i64>) -> Result<String> {
    let leader = leader_of(q)?;
    let mut rows: Vec<[String; 7]> = Vec::new();
    let groups = [
        ("Leader", vec![leader]),
        (
            "Follower",
            q.voters
                .iter()
                .filter(|v| v.replica_id != q.leader_id)
                .collect(),
        ),
        ("Observer", q.observers.iter().collect()),
    ];
    let timestamp = |t: i64, what: &str| -> Result<String> {
        match now_ms {
            _ if t < 0 => Ok("-1".into()),
            None => Ok(t.to_string()),
            Some(now) if t > 0 && t <= now => Ok(format!("{} ms ago", now - t)),
            Some(now) => bail!(
                "Error while computing relative time, possible drift in system clock. \
                 Current timestamp is {now}, {what} timestamp is {t}"
            ),
        }
    };
    for (status, replicas) in groups {
        for r in replicas {
            rows.push([
                r.replica_id.to_string(),
                r.replica_directory_id.to_string(),
                r.log_end_offset.to_string(),
                (leader.log_end_offset - r.log_end_offset).to_string(),
                timestamp(r.last_fetch_timestamp, "last fetch")?,
                timestamp(r.last_caught_up_timestamp, "last caught up")?,
                status.to_string(),
            ]);
        }
    }
    let header = [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ];
    Ok(table(&header, &rows))
}

/// Kafka's `ToolsUtils.prettyPrintTable`: every cell padded to its column's width and
/// followed by a tab, the header first.
fn table(header: &[&str; 7], rows: &[[String; 7]]) -> String {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let mut out = String::new();
    let mut print = |cells: &mut dyn Iterator<Item = &str>| {
        for (cell, w) in cells.zip(widths) {
            let _ = write!(out, "{cell:<w$}\t");
        }
        out.push('\n');
    };
    print(&mut header.iter().copied());
    for row in rows {
        print(&mut row.iter().map(String::as_str));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replica(id: i32, leo: i64, fetch: i64, caught_up: i64) -> ReplicaState {
        ReplicaState {
            replica_id: id,
            log_end_offset: leo,
            last_fetch_timestamp: fetch,
            last_caught_up_timestamp: caught_up,
            ..Default::default()
        }
    }

    fn quorum() -> Quorum {
        Quorum {
            cluster_id: Some("MkU3OEVBNTcwNTJENDM2Qg".into()),
            leader_id: 2,
            leader_epoch: 7,
            high_watermark: 120,
            voters: vec![
                replica(2, 125, 1_700_000_000_500, 1_700_000_000_500),
                replica(1, 120, 1_700_000_000_400, 1_700_000_000_300),
                replica(3, 125, 1_700_000_000_450, 1_700_000_000_450),
            ],
            observers: vec![replica(100, 90, 1_700_000_000_100, -1)],
            endpoints: BTreeMap::from([
                (1, vec!["CONTROLLER://127.0.0.1:9093".to_string()]),
                (2, vec!["CONTROLLER://[::1]:9094".to_string()]),
            ]),
        }
    }

    #[test]
    fn status_is_laid_out_as_kafka_prints_it() {
        let text = render_status(&quorum()).unwrap();
        assert_eq!(
            text,
            "ClusterId:              MkU3OEVBNTcwNTJENDM2Qg\n\
             LeaderId:               2\n\
             LeaderEpoch:            7\n\
             HighWatermark:          120\n\
             MaxFollowerLag:         5\n\
             MaxFollowerLagTimeMs:   200\n\
             CurrentVoters:          [{\"id\": 2, \"endpoints\": [\"CONTROLLER://[::1]:9094\"]}, \
             {\"id\": 1, \"endpoints\": [\"CONTROLLER://127.0.0.1:9093\"]}, {\"id\": 3}]\n\
             CurrentObservers:       [{\"id\": 100}]\n"
        );
    }

    #[test]
    fn a_leader_alone_at_the_lowest_offset_has_no_lag() {
        let mut q = quorum();
        for v in &mut q.voters {
            v.log_end_offset = 125;
        }
        q.voters[2].replica_directory_id = Uuid([1; 16]);
        q.cluster_id = None;
        let text = render_status(&q).unwrap();
        assert!(text.contains("MaxFollowerLag:         0\n"), "{text}");
        assert!(text.contains("MaxFollowerLagTimeMs:   0\n"), "{text}");
        assert!(text.contains("{\"id\": 3, \"directoryId\": \"AQEBAQEBAQEBAQEBAQEBAQ\"}"));
        assert!(
            text.starts_with("ClusterId:              unknown"),
            "{text}"
        );
    }

    #[test]
    fn replication_is_a_tab_separated_padded_table() {
        let text = render_replication(&quorum(), None).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines,
            [
                "NodeId\tDirectoryId           \tLogEndOffset\tLag\tLastFetchTimestamp\tLastCaughtUpTimestamp\tStatus  \t",
                "2     \tAAAAAAAAAAAAAAAAAAAAAA\t125         \t0  \t1700000000500     \t1700000000500        \tLeader  \t",
                "1     \tAAAAAAAAAAAAAAAAAAAAAA\t120         \t5  \t1700000000400     \t1700000000300        \tFollower\t",
                "3     \tAAAAAAAAAAAAAAAAAAAAAA\t125         \t0  \t1700000000450     \t1700000000450        \tFollower\t",
                "100   \tAAAAAAAAAAAAAAAAAAAAAA\t90          \t35 \t1700000000100     \t-1                   \tObserver\t",
            ]
        );
    }

    #[test]
    fn human_readable_replication_shows_ages() {
        let text = render_replication(&quorum(), Some(1_700_000_001_000)).unwrap();
        assert!(text.contains("500 ms ago"), "{text}");
        assert!(text.contains("900 ms ago"), "{text}");
        let err = render_replication(&quorum(), Some(1_600_000_000_000)).unwrap_err();
        assert!(err.to_string().contains("possible drift"), "{err}");
    }

    #[test]
    fn a_leader_missing_from_the_voters_is_an_error() {
        let mut q = quorum();
        q.leader_id = 9;
        assert!(render_status(&q).is_err());
        assert!(render_replication(&q, None).is_err());
    }

    #[test]
    fn a_command_config_names_the_controllers_protocol_and_login() {
        let security = |text: &str| client_security(&Properties::parse(text));
        let plain = security("").unwrap();
        assert_eq!(plain.protocol, SecurityProtocol::Plaintext);
        assert!(plain.tls.is_none() && plain.sasl.is_none());
        let scram = security(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule \
             required username=\"admin\" password=\"admin-secret\";\n",
        )
        .unwrap();
        let login = scram.sasl.expect("a SASL login");
        assert_eq!(login.mechanism.name(), "SCRAM-SHA-512");
        assert_eq!(login.username, "admin");
        // Kafka's client default mechanism, GSSAPI, is refused by name; so is a bad protocol.
        let e = security("security.protocol=SASL_PLAINTEXT\n").unwrap_err();
        assert!(e.to_string().contains("GSSAPI"), "{e}");
        let e = security("security.protocol=TLS\n").unwrap_err();
        assert!(e.to_string().contains("security.protocol"), "{e}");
        let e = security("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n").unwrap_err();
        assert!(e.to_string().contains("sasl.jaas.config"), "{e}");
    }
}
