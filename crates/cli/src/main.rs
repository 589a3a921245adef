//! `kraftd`: one binary for every role. `main` only parses flags, builds the config and runs
//! the node. Until the server issues land, the roles are named here and refuse to start with
//! a one-line message rather than pretend to run.

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "kraftd",
    version,
    about = "A Kafka-compatible event-streaming cluster in KRaft mode"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Role>,
}

#[derive(Subcommand)]
enum Role {
    /// Run a controller: a Raft voter of __cluster_metadata and the QuorumController.
    Controller,
    /// Run a broker: replicates metadata as an observer and serves Kafka clients.
    Broker,
    /// Run both roles in one process.
    Combined,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        None => {
            use clap::CommandFactory;
            Cli::command().print_help()?;
            println!();
            Ok(())
        }
        Some(role) => {
            let name = match role {
                Role::Controller => "controller",
                Role::Broker => "broker",
                Role::Combined => "combined",
            };
            anyhow::bail!("the {name} role is not built yet; see the open issues (`issues`)")
        }
    }
}
