//! `cargo xtask interop`: kraftd beside Apache Kafka 4.4.0 in one cluster (issue 31), every
//! check run and a table of what passed.
//!
//! Each check is a test of `crates/cli/tests` that starts the mixed cluster on loopback from
//! Kafka's jars (the ones the suite fetches into `target/kafka-jars/`) and real `kraftd`
//! processes; this command runs them one at a time, the long ones the suite would leave out
//! (`#[ignore]`d; none at present) among them, keeps each one's output under
//! `target/interop/`, and prints one row per check. A check is the test, not a copy of it:
//! what passes here passes in the README's test command, and the other way round.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

/// `cargo xtask interop` arguments.
#[derive(clap::Args, Debug)]
pub struct InteropArgs {
    /// Only the checks whose test name contains this.
    #[arg(long)]
    only: Option<String>,
    /// Leave out the checks the suite leaves out (the whole roll).
    #[arg(long)]
    quick: bool,
}

/// One check: what it proves, and the test that proves it.
struct Check {
    what: &'static str,
    /// The test binary of `kraftd-cli` (`crates/cli/tests/<binary>.rs`).
    binary: &'static str,
    test: &'static str,
    /// Left out of the README's test command: its length, or a failure not diagnosed yet.
    long: bool,
}

const CHECKS: &[Check] = &[
    Check {
        what: "kraftd advertises the APIs and versions Kafka 4.4.0 advertises",
        binary: "api_versions_kafka",
        test: "kraftd_advertises_the_apis_kafka_4_4_advertises",
        long: false,
    },
    Check {
        what: "kraftd's format finalizes what kafka-storage format does",
        binary: "mixed_kafka_cluster",
        test: "kraftd_format_finalizes_what_kafka_storage_format_does",
        long: false,
    },
    Check {
        what: "kafka-dump-log decodes kraftd's metadata log (MV 33 and 25)",
        binary: "mixed_kafka_cluster",
        test: "kafka_dump_log_decodes_what_kraftd_writes_at_metadata_versions_33_and_25",
        long: false,
    },
    Check {
        what: "a kraftd broker on Kafka controllers leads and follows",
        binary: "mixed_kafka_cluster",
        test: "a_kraftd_broker_joins_a_kafka_quorum_and_leads_a_partition",
        long: false,
    },
    Check {
        what: "a Kafka broker on kraftd controllers leads and follows",
        binary: "mixed_kafka_cluster",
        test: "a_kafka_broker_joins_a_kraftd_quorum_at_the_default_metadata_version",
        long: false,
    },
    Check {
        what: "voters: 1 kraftd + 2 Kafka, each side leads",
        binary: "mixed_kafka_cluster",
        test: "one_kraftd_and_two_kafka_controllers_vote_in_one_quorum_and_each_leads",
        long: false,
    },
    Check {
        what: "voters: 2 kraftd + 1 Kafka, each side leads",
        binary: "mixed_kafka_cluster",
        test: "two_kraftd_and_one_kafka_controller_vote_in_one_quorum_and_each_leads",
        long: false,
    },
    Check {
        what: "dynamic quorum: kraftd adds and removes a Kafka controller",
        binary: "metadata_quorum_voters_kafka",
        test: "kraftd_adds_and_removes_a_kafka_controller",
        long: false,
    },
    Check {
        what: "Kafka writes SCRAM, ACLs, quotas, configs; a kraftd broker enforces",
        binary: "mixed_kafka_security",
        test: "what_kafka_writes_a_kraftd_broker_enforces",
        long: false,
    },
    Check {
        what: "kraftd writes SCRAM, ACLs, quotas, configs; a Kafka broker enforces",
        binary: "mixed_kafka_security",
        test: "what_kraftd_writes_a_kafka_broker_enforces",
        long: false,
    },
    Check {
        what:
            "a Kafka broker swapped to kraftd and back (JBOD, groups, KIP-848 member, share group)",
        binary: "node_swap",
        test: "a_kafka_broker_is_swapped_for_kraftd_on_its_own_directories_and_back",
        long: false,
    },
    Check {
        what: "a SASL_SSL (SCRAM) Kafka broker swapped to kraftd and back",
        binary: "node_swap",
        test: "a_sasl_ssl_kafka_broker_is_swapped_for_kraftd_and_back",
        long: false,
    },
    Check {
        what: "a Kafka controller swapped to kraftd and back (follower, then active)",
        binary: "node_swap",
        test: "a_kafka_controller_is_swapped_for_kraftd_on_its_own_directory_and_back",
        long: false,
    },
    Check {
        what: "a dynamic-quorum (kraft.version 1) Kafka controller swapped to kraftd and back",
        binary: "node_swap",
        test: "a_kafka_controller_of_a_dynamic_quorum_is_swapped_for_kraftd_and_back",
        long: false,
    },
    Check {
        what: "3 controllers + 3 brokers rolled onto kraftd and back under load",
        binary: "node_swap",
        test: "a_kafka_cluster_rolls_onto_kraftd_one_node_at_a_time_and_back",
        long: false,
    },
    Check {
        what: "Kafka's tools on an all-kraftd and a mixed cluster (incl. dump-log, shell)",
        binary: "mixed_kafka_tools",
        test: "kafka_tools_work_on_an_all_kraftd_cluster_and_on_a_mixed_one",
        long: false,
    },
    Check {
        what: "a SASL_SSL cluster on a dynamic quorum (3+3) rolled onto kraftd and back",
        binary: "node_swap",
        test: "a_sasl_ssl_kafka_cluster_on_a_dynamic_quorum_rolls_onto_kraftd_and_back",
        long: false,
    },
];

pub fn run(root: &Path, args: InteropArgs) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let checks: Vec<&Check> = CHECKS
        .iter()
        .filter(|c| !(args.quick && c.long))
        .filter(|c| {
            args.only
                .as_ref()
                .is_none_or(|o| c.test.contains(o.as_str()))
        })
        .collect();
    if checks.is_empty() {
        bail!("no check's test name contains {:?}", args.only);
    }
    let binaries: Vec<&str> = {
        let mut b: Vec<&str> = checks.iter().map(|c| c.binary).collect();
        b.sort_unstable();
        b.dedup();
        b
    };
    // Built once, before any clock starts.
    let mut build = Command::new(&cargo);
    build.args(["test", "-p", "kraftd-cli", "--no-run"]);
    for b in &binaries {
        build.args(["--test", b]);
    }
    let status = build
        .current_dir(root)
        .status()
        .context("building the checks")?;
    if !status.success() {
        bail!("building the interop tests failed ({status})");
    }
    let out_dir = root.join("target").join("interop");
    std::fs::create_dir_all(&out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let mut rows = Vec::new();
    for check in &checks {
        let log = out_dir.join(format!("{}.log", check.test));
        println!("==> {} ({}::{})", check.what, check.binary, check.test);
        let file =
            std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
        let started = Instant::now();
        let status = Command::new(&cargo)
            .args(["test", "-p", "kraftd-cli", "--test", check.binary, "--"])
            .args(["--exact", check.test, "--include-ignored", "--nocapture"])
            .current_dir(root)
            .stdout(file.try_clone()?)
            .stderr(file)
            .status()
            .with_context(|| format!("running {}", check.test))?;
        let took = started.elapsed().as_secs();
        let passed = status.success();
        println!(
            "    {} in {took} s (output: {})",
            if passed { "passed" } else { "FAILED" },
            log.display()
        );
        rows.push((check, passed, took));
    }
    println!();
    println!("| check | result | s | test |");
    println!("|---|---|---|---|");
    for (check, passed, took) in &rows {
        println!(
            "| {} | {} | {took} | `{}::{}`{} |",
            check.what,
            if *passed { "passed" } else { "**FAILED**" },
            check.binary,
            check.test,
            if check.long {
                " (not in the suite: long)"
            } else {
                ""
            }
        );
    }
    let failed = rows.iter().filter(|(_, passed, _)| !passed).count();
    if failed > 0 {
        bail!(
            "{failed} of {} interop checks failed (their output is in {})",
            rows.len(),
            out_dir.display()
        );
    }
    Ok(())
}
