//! `kraftd metadata-quorum`: describes the metadata quorum over DescribeQuorum, in the shape
//! of Kafka's `kafka-metadata-quorum.sh`.

/// `--bootstrap-controller HOST:PORT describe [--status|--replication]`.
#[derive(clap::Args, Clone, Debug)]
pub struct Args {
    /// A controller's `host:port`.
    #[arg(long)]
    pub bootstrap_controller: String,
}

pub fn run(args: Args) -> anyhow::Result<()> {
    anyhow::bail!(
        "metadata-quorum is not built yet (asked {})",
        args.bootstrap_controller
    )
}
