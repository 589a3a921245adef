//! `kraftd`: one binary for every role. `main` parses flags, builds the config from Kafka's
//! property names and runs the node; `format` and `random-uuid` prepare log directories as
//! Kafka's `kafka-storage` tool does.

mod config;
mod connection_quotas;
mod console;
mod doctor;
mod embedded;
mod format;
mod metadata_quorum;
mod metrics_http;
mod node;
mod process_metrics;
mod properties;
mod scram_args;
mod security;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "kraftd",
    version,
    about = "A Kafka-compatible event-streaming cluster in KRaft mode"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// The config file and the flags that override it.
#[derive(Args, Clone)]
struct ConfigArgs {
    /// A Kafka properties file (`server.properties`).
    #[arg(long, short = 'c')]
    config: PathBuf,
    /// `key=value`, overriding the file; repeatable.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

/// `kraftd combined`'s config is optional: without one it runs the embedded default.
#[derive(Args, Clone)]
struct OptionalConfigArgs {
    /// A Kafka properties file (`server.properties`).
    #[arg(long, short = 'c')]
    config: Option<PathBuf>,
    /// `key=value`, overriding the file; repeatable.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    overrides: Vec<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Run a controller: a Raft voter of __cluster_metadata and the QuorumController.
    Controller(ConfigArgs),
    /// Run a broker: replicates metadata as an observer and serves Kafka clients.
    Broker(ConfigArgs),
    /// Run both roles in one process; without --config, the embedded single-node default.
    Combined(OptionalConfigArgs),
    /// Format the log directories of a node (meta.properties, bootstrap.checkpoint).
    Format {
        #[command(flatten)]
        config: ConfigArgs,
        /// The cluster id, from `kraftd random-uuid`.
        #[arg(long, short = 't')]
        cluster_id: String,
        /// Skip directories already formatted for this cluster and node.
        #[arg(long, short = 'g')]
        ignore_formatted: bool,
        /// A SCRAM credential for the bootstrap metadata, as Kafka's `kafka-storage format`
        /// takes it: 'SCRAM-SHA-256=[name=admin,password=admin-secret]' (also `iterations=`,
        /// `salt=` in base64, `saltedpassword=` in base64 with `salt`). Repeatable.
        #[arg(
            long = "add-scram",
            short = 'S',
            value_name = "MECHANISM=[name=...,...]"
        )]
        add_scram: Vec<String>,
        /// Initialize this controller as a single-node dynamic quorum (KIP-853);
        /// controller.quorum.voters must not be set (controller.quorum.bootstrap.servers is).
        #[arg(long, short = 's', group = "quorum")]
        standalone: bool,
        /// The initial dynamic quorum, the same on every node:
        /// id@host:port:directoryId,... (this node's metadata directory takes the directory
        /// id of its own entry).
        #[arg(
            long,
            short = 'I',
            group = "quorum",
            value_name = "ID@HOST:PORT:DIRECTORY_ID,..."
        )]
        initial_controllers: Option<String>,
        /// Format a node of a dynamic quorum without initial voters (it joins a quorum
        /// formatted elsewhere, as an observer until added).
        #[arg(long, short = 'N', group = "quorum")]
        no_initial_controllers: bool,
        /// The release whose metadata.version and default feature levels the cluster starts
        /// at, as `kafka-storage format --release-version` takes it ("4.0", "3.9-IV0");
        /// default 4.4-IV2.
        #[arg(long, short = 'r', value_name = "RELEASE")]
        release_version: Option<String>,
        /// A feature level to finalize instead of the release's default, as `kafka-storage
        /// format --feature`: `share.version=1`. Repeatable.
        #[arg(long = "feature", short = 'f', value_name = "NAME=LEVEL")]
        feature: Vec<String>,
    },
    /// Print a new random cluster or directory id.
    RandomUuid,
    /// Describe the metadata quorum, as Kafka's kafka-metadata-quorum.sh.
    MetadataQuorum(metadata_quorum::Args),
    /// Diagnose the cluster: what is wrong, most serious first (exit 0 healthy, 1 warnings,
    /// 2 critical or unreachable).
    Doctor(doctor::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        None => embedded::run(&[]),
        Some(Command::MetadataQuorum(args)) => metadata_quorum::run(args),
        Some(Command::Doctor(args)) => doctor::run(args),
        Some(Command::RandomUuid) => {
            println!("{}", format::random_uuid()?);
            Ok(())
        }
        Some(Command::Format {
            config,
            cluster_id,
            ignore_formatted,
            add_scram,
            standalone,
            initial_controllers,
            no_initial_controllers,
            release_version,
            feature,
        }) => {
            let node = config::NodeConfig::load(Some(&config.config), &config.overrides)?;
            let scram = scram_args::scram_records(&add_scram, format::random_scram_salt)?;
            let flag = match (standalone, initial_controllers, no_initial_controllers) {
                (true, _, _) => format::QuorumFlag::Standalone,
                (_, Some(list), _) => format::QuorumFlag::InitialControllers(list),
                (_, _, true) => format::QuorumFlag::NoInitialControllers,
                _ => format::QuorumFlag::None,
            };
            let features = format::FeatureArgs {
                release_version,
                features: feature,
            };
            format::format(
                &node,
                &cluster_id,
                ignore_formatted,
                &scram,
                &flag,
                &features,
            )?;
            println!(
                "Formatted {} for cluster {cluster_id}, node {}",
                format::all_dirs(&node)
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                node.node_id
            );
            Ok(())
        }
        Some(Command::Controller(args)) => run_role(&args, config::ProcessRole::Controller),
        Some(Command::Broker(args)) => run_role(&args, config::ProcessRole::Broker),
        Some(Command::Combined(args)) => match args.config {
            None => embedded::run(&args.overrides),
            Some(config) => {
                let args = ConfigArgs {
                    config,
                    overrides: args.overrides,
                };
                init_tracing();
                let node = config::NodeConfig::load(Some(&args.config), &args.overrides)?;
                if !(node.is_controller() && node.roles.contains(&config::ProcessRole::Broker)) {
                    anyhow::bail!(
                        "process.roles in {} must be broker,controller for `kraftd combined`",
                        args.config.display()
                    );
                }
                node::run(node, &args.config.display().to_string(), |_| {})
            }
        },
    }
}

/// `kraftd controller` / `kraftd broker`: the file's `process.roles` must include the role.
fn run_role(args: &ConfigArgs, role: config::ProcessRole) -> anyhow::Result<()> {
    init_tracing();
    let node = config::NodeConfig::load(Some(&args.config), &args.overrides)?;
    if !node.roles.contains(&role) {
        anyhow::bail!(
            "process.roles in {} is {:?}; this command runs the {role:?} role",
            args.config.display(),
            node.props.get("process.roles").unwrap_or_default()
        );
    }
    node::run(node, &args.config.display().to_string(), |_| {})
}

/// Logs to stderr; `RUST_LOG` filters (default `info`).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}
