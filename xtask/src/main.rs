//! kraftd's developer commands, run as `cargo xtask <command>` (an alias in
//! `.cargo/config.toml`). `ci` is the one command that checks everything; `.ci/run` calls it.

mod bench;
mod chaos;
mod cluster;
mod codegen;
mod fuzz;
mod interop;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Parser)]
#[command(name = "xtask", about = "kraftd developer commands")]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Generate crates/protocol/src/generated from Kafka's JSON schemas.
    Codegen {
        /// Fail if the committed generated code differs from a fresh generation.
        #[arg(long)]
        check: bool,
    },
    /// Everything CI checks: formatting, generated code, clippy, all tests.
    Ci,
    /// Seed a fuzz target's corpus from the captured frames and run it with cargo-fuzz.
    Fuzz(fuzz::FuzzArgs),
    /// Benchmarks that print figures (`bench produce`, `bench cleaner`, `bench groups`,
    /// `bench txn`, `bench tls`).
    Bench(bench::BenchArgs),
    /// Faults (kill -9, SIGSTOP, network partitions) chosen by a seed, injected into a
    /// cluster of real kraftd processes under stock-client load, then a check of everything
    /// the clients saw. Needs root (network namespaces).
    Chaos(chaos::ChaosArgs),
    /// kraftd beside Apache Kafka 4.4.0 in one cluster: every mixed-cluster and node-swap
    /// check (the whole rolling migration too), one at a time, and a table of what passed.
    Interop(interop::InteropArgs),
    /// Start a local cluster of kraftd processes under target/cluster/.
    ClusterUp(cluster::UpArgs),
    /// Stop the local cluster (SIGTERM, then SIGKILL after 30 s).
    ClusterDown,
    /// Show the local cluster's processes and metadata quorum.
    ClusterStatus,
    /// Print one node's log.
    ClusterLogs {
        /// The node id.
        node: u32,
    },
    /// Run the Raft simulator's random fault schedules (release build).
    Sim {
        /// Replay exactly this seed (as printed by a failure).
        #[arg(long, conflicts_with = "seeds")]
        seed: Option<u64>,
        /// Run this many seeds.
        #[arg(long)]
        seeds: Option<u64>,
        /// Simulated milliseconds of faults per seed before healing.
        #[arg(long)]
        fault_ms: Option<u64>,
        /// Print role changes and crashes.
        #[arg(long)]
        trace: bool,
        /// Threads to spread the seeds over (the simulator's `SIM_THREADS`).
        #[arg(long)]
        threads: Option<u32>,
    },
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let root = repo_root()?;
    match cli.command {
        Cmd::Codegen { check } => codegen::run(&root, check),
        Cmd::Ci => ci(&root),
        Cmd::Fuzz(args) => fuzz::run(&root, args),
        Cmd::Bench(args) => bench::run(&root, args),
        Cmd::Chaos(args) => chaos::run(&root, args),
        Cmd::Interop(args) => interop::run(&root, args),
        Cmd::ClusterUp(args) => cluster::up(&root, args),
        Cmd::ClusterDown => cluster::down(&root),
        Cmd::ClusterStatus => cluster::status(&root),
        Cmd::ClusterLogs { node } => cluster::logs(&root, node),
        Cmd::Sim {
            seed,
            seeds,
            fault_ms,
            trace,
            threads,
        } => sim(&root, seed, seeds, fault_ms, trace, threads),
    }
}

fn repo_root() -> Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    Ok(manifest
        .parent()
        .context("xtask has no parent directory")?
        .to_path_buf())
}

/// Runs a command in the repository root, failing with its name if it fails.
fn run(root: &Path, program: &str, args: &[&str]) -> Result<()> {
    println!("==> {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .current_dir(root)
        .status()
        .with_context(|| format!("starting {program}"))?;
    if !status.success() {
        bail!("`{program} {}` failed ({status})", args.join(" "));
    }
    Ok(())
}

/// Runs `random_seeds_hold_every_invariant_and_converge` of crates/raft's simulator with the
/// environment variables it reads (`SIM_SEED`, `SIM_SEEDS`, `SIM_FAULT_MS`, `SIM_TRACE`,
/// `SIM_THREADS`).
fn sim(
    root: &Path,
    seed: Option<u64>,
    seeds: Option<u64>,
    fault_ms: Option<u64>,
    trace: bool,
    threads: Option<u32>,
) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "test",
        "--release",
        "-p",
        "kraftd-raft",
        "--test",
        "sim",
        "random_seeds_hold_every_invariant_and_converge",
        "--",
        "--nocapture",
    ])
    .current_dir(root);
    if let Some(seed) = seed {
        cmd.env("SIM_SEED", seed.to_string());
    }
    if let Some(seeds) = seeds {
        cmd.env("SIM_SEEDS", seeds.to_string());
    }
    if let Some(ms) = fault_ms {
        cmd.env("SIM_FAULT_MS", ms.to_string());
    }
    if trace {
        cmd.env("SIM_TRACE", "1");
    }
    if let Some(threads) = threads {
        cmd.env("SIM_THREADS", threads.to_string());
    }
    let status = cmd.status().context("starting the simulator")?;
    if !status.success() {
        bail!("the simulator found a violation (its seed is printed above)");
    }
    Ok(())
}

fn ci(root: &Path) -> Result<()> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // CI builds a clean checkout once: incremental caches would only take disk (gigabytes for
    // a hundred test binaries) that the build itself needs.
    std::env::set_var("CARGO_INCREMENTAL", "0");
    run(root, &cargo, &["fmt", "--all", "--check"])?;
    if codegen::schema_dir(root).join("message").is_dir() {
        codegen::run(root, true)?;
    } else {
        println!("==> codegen check skipped: no schemas (set KRAFTD_SCHEMAS)");
    }
    run(
        root,
        &cargo,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
    )?;
    let (passed, failed) = run_tests(root, &cargo)?;
    // One closing line for whoever reads the end of the log.
    println!("ci: {passed} passed, {failed} failed");
    if failed > 0 {
        bail!("{failed} tests failed");
    }
    Ok(())
}

/// The failures of a suite run, repeated at the end of the log: whoever reads only its tail
/// (a CI summary keeps the last lines) still sees why each test failed, not just its name.
/// A failure's output can hold whole node logs, so each keeps its first lines and every
/// `panicked at` line with the few that follow it.
#[derive(Default)]
struct FailureDigest {
    /// The test binary running (cargo's `Running tests/x.rs (...)` line).
    binary: String,
    /// Inside a binary's `failures:` block, until its `test result:` line.
    in_failures: bool,
    /// Per failing binary: the lines kept.
    kept: Vec<(String, Vec<String>)>,
    /// Lines still to keep after a `panicked at` line.
    follow: usize,
    /// Lines kept of the current block.
    block: usize,
}

impl FailureDigest {
    const HEAD_LINES: usize = 40;
    const AFTER_PANIC_LINES: usize = 12;
    const LINE_CHARS: usize = 400;

    fn line(&mut self, line: &str) {
        // cargo's `     Running tests/x.rs (target/debug/deps/x-<hash>)`, not a test's own
        // line that happens to start with the word.
        let running = line
            .trim_start()
            .strip_prefix("Running ")
            .filter(|rest| rest.ends_with(')') && rest.contains(" (target"));
        if let Some(rest) = running {
            self.binary = rest.to_string();
            self.in_failures = false;
            return;
        }
        if line.starts_with("test result: ") {
            self.in_failures = false;
            return;
        }
        if line == "failures:" && !self.in_failures {
            self.in_failures = true;
            self.block = 0;
            self.follow = 0;
            self.kept.push((self.binary.clone(), Vec::new()));
            return;
        }
        if !self.in_failures {
            return;
        }
        let keep = if line.contains("panicked at") {
            self.follow = Self::AFTER_PANIC_LINES;
            true
        } else if self.follow > 0 {
            self.follow -= 1;
            true
        } else {
            self.block < Self::HEAD_LINES
        };
        self.block += 1;
        if keep {
            let short: String = line.chars().take(Self::LINE_CHARS).collect();
            if let Some((_, lines)) = self.kept.last_mut() {
                lines.push(short);
            }
        }
    }

    fn print(&self) {
        if self.kept.is_empty() {
            return;
        }
        println!();
        println!("==> why each failing test binary failed (repeated from above, shortened)");
        for (binary, lines) in &self.kept {
            println!("--- {binary}");
            for line in lines {
                println!("{line}");
            }
        }
        println!();
    }
}

/// Runs the whole test suite, echoing its output, and adds up cargo's `test result:` lines.
fn run_tests(root: &Path, cargo: &str) -> Result<(u64, u64)> {
    use std::io::BufRead;
    // Every test binary runs even after one fails, so the count covers the whole suite.
    println!("==> {cargo} test --workspace --no-fail-fast");
    let mut child = Command::new(cargo)
        .args(["test", "--workspace", "--no-fail-fast"])
        .current_dir(root)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .context("starting cargo test")?;
    let stdout = child.stdout.take().context("cargo test has no stdout")?;
    let (mut passed, mut failed) = (0u64, 0u64);
    let mut digest = FailureDigest::default();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.context("reading cargo test output")?;
        println!("{line}");
        digest.line(&line);
        if let Some(rest) = line.strip_prefix("test result: ") {
            // "ok. 14 passed; 0 failed; 0 ignored; ..."
            let count = |word: &str| -> u64 {
                rest.split(';')
                    .filter_map(|part| part.trim().strip_suffix(word))
                    .filter_map(|n| n.split_whitespace().last()?.parse::<u64>().ok())
                    .sum()
            };
            passed += count("passed");
            failed += count("failed");
        }
    }
    let status = child.wait().context("waiting for cargo test")?;
    digest.print();
    if !status.success() && failed == 0 {
        bail!("`cargo test --workspace` failed ({status})");
    }
    Ok((passed, failed))
}

#[cfg(test)]
mod tests {
    use super::FailureDigest;

    #[test]
    fn the_failure_digest_keeps_each_failing_binarys_panic_and_not_the_passing_output() {
        let mut digest = FailureDigest::default();
        let log = "     Running tests/a.rs (target/debug/deps/a-1)\n\
                   test ok_one ... ok\n\
                   test result: ok. 1 passed; 0 failed\n\
                   \x20    Running tests/b.rs (target/debug/deps/b-2)\n\
                   test bad ... FAILED\n\
                   failures:\n\
                   ---- bad stdout ----\n\
                   thread 'bad' panicked at tests/b.rs:9:5:\n\
                   node exited with 1\n\
                   failures:\n\
                   \x20   bad\n\
                   test result: FAILED. 0 passed; 1 failed\n";
        for line in log.lines() {
            digest.line(line);
        }
        assert_eq!(digest.kept.len(), 1);
        let (binary, lines) = &digest.kept[0];
        assert_eq!(binary, "tests/b.rs (target/debug/deps/b-2)");
        assert!(lines
            .iter()
            .any(|l| l.contains("panicked at tests/b.rs:9:5")));
        assert!(lines.iter().any(|l| l == "node exited with 1"));
        assert!(!lines.iter().any(|l| l.contains("ok_one")));
    }

    #[test]
    fn a_long_failure_keeps_its_head_and_the_lines_after_each_panic() {
        let mut digest = FailureDigest::default();
        digest.line("     Running tests/c.rs (target/debug/deps/c-3)");
        digest.line("failures:");
        for i in 0..1000 {
            digest.line(&format!("log line {i}"));
        }
        digest.line("thread 'c' panicked at tests/c.rs:1:1:");
        for i in 0..1000 {
            digest.line(&format!("after {i}"));
        }
        digest.line("test result: FAILED. 0 passed; 1 failed");
        let lines = &digest.kept[0].1;
        assert_eq!(
            lines.len(),
            FailureDigest::HEAD_LINES + 1 + FailureDigest::AFTER_PANIC_LINES
        );
        assert_eq!(lines[0], "log line 0");
        assert!(lines.contains(&"after 11".to_string()));
        assert!(!lines.contains(&"after 12".to_string()));
    }
}
