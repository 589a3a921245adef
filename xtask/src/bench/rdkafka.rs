//! librdkafka's `rdkafka_performance`, the C load generator of `bench cost`: a client that is
//! not the limit the way a JVM on the same two cores can be (issue 33). Built on demand into
//! `target/rdkafka/`, never committed: the source is librdkafka's as vendored by crates.io's
//! `rdkafka-sys` crate (the one registry this machine reaches that carries it), fetched by
//! cargo through a throwaway manifest, copied out of cargo's registry (it is built in place),
//! configured with SSL and the built-in SASL SCRAM (OpenSSL's headers; no Cyrus SASL, no
//! curl, no zstd) and made with librdkafka's own `make`. Then one run of it, producer or
//! consumer, with its summary line parsed and its own CPU measured by GNU `time`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// The `rdkafka-sys` release whose vendored librdkafka (2.10.0) is built.
pub(super) const RDKAFKA_SYS: &str = "4.9.0";

/// `target/rdkafka/rdkafka-sys-<version>/examples/rdkafka_performance`, built first if absent.
pub(super) fn rdkafka_performance(root: &Path) -> Result<PathBuf> {
    let base = root.join("target").join("rdkafka");
    let src = base.join(format!("rdkafka-sys-{RDKAFKA_SYS}"));
    let bin = src.join("examples").join("rdkafka_performance");
    if bin.is_file() {
        return Ok(bin);
    }
    check_build_tools()?;
    let vendored = fetch_source(&base)?;
    println!(
        "==> building rdkafka_performance from {} into {}",
        vendored.display(),
        src.display()
    );
    let _ = std::fs::remove_dir_all(&src);
    run_in(&base, "cp", &["-a", path_str(&vendored)?, path_str(&src)?])?;
    // rdkafka-sys's own choice of features, with SSL: the SCRAM mechanisms come with it.
    run_in(
        &src,
        "./configure",
        &[
            "--enable-ssl",
            "--disable-gssapi",
            "--disable-curl",
            "--disable-zstd",
            "--disable-lz4-ext",
        ],
    )?;
    let jobs = std::env::var("CARGO_BUILD_JOBS").unwrap_or_else(|_| "2".into());
    run_in(&src, "make", &["-j", &jobs, "-C", "src", "librdkafka.a"])?;
    run_in(&src, "make", &["-C", "examples", "rdkafka_performance"])?;
    if !bin.is_file() {
        bail!("librdkafka's make left no {}", bin.display());
    }
    Ok(bin)
}

/// A C compiler, make and OpenSSL's headers, or one line saying what to install.
fn check_build_tools() -> Result<()> {
    let has = |tool: &str| {
        Command::new(tool)
            .arg("--version")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    if !has("cc") || !has("make") || !Path::new("/usr/include/openssl/ssl.h").is_file() {
        bail!(
            "building librdkafka's rdkafka_performance needs cc, make and OpenSSL's headers: \
             apt-get install build-essential libssl-dev"
        );
    }
    Ok(())
}

/// librdkafka's source directory inside cargo's registry copy of `rdkafka-sys`, which
/// `cargo metadata` on a throwaway manifest downloads.
fn fetch_source(base: &Path) -> Result<PathBuf> {
    let manifest_dir = base.join("fetch");
    std::fs::create_dir_all(manifest_dir.join("src"))?;
    // Its own [workspace]: cargo must not take it for a member of kraftd's.
    std::fs::write(
        manifest_dir.join("Cargo.toml"),
        format!(
            "# written by cargo xtask bench cost: fetches librdkafka's source, builds nothing\n\
             [package]\nname = \"rdkafka-source\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\
             publish = false\n\n[workspace]\n\n[dependencies]\n\
             rdkafka-sys = {{ version = \"={RDKAFKA_SYS}\", default-features = false }}\n"
        ),
    )?;
    std::fs::write(manifest_dir.join("src").join("lib.rs"), "")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    println!("==> fetching rdkafka-sys {RDKAFKA_SYS} (librdkafka's source) with cargo");
    let out = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(manifest_dir.join("Cargo.toml"))
        .stderr(Stdio::inherit())
        .output()
        .context("running cargo metadata")?;
    if !out.status.success() {
        bail!("cargo could not fetch rdkafka-sys {RDKAFKA_SYS} from crates.io");
    }
    let metadata: serde_json::Value = serde_json::from_slice(&out.stdout)?;
    let manifest = metadata["packages"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "rdkafka-sys")
        .and_then(|p| p["manifest_path"].as_str())
        .context("no rdkafka-sys in cargo metadata's answer")?;
    let dir = Path::new(manifest)
        .parent()
        .context("rdkafka-sys's manifest has no directory")?
        .join("librdkafka");
    if !dir.join("examples").join("rdkafka_performance.c").is_file() {
        bail!("{} holds no examples/rdkafka_performance.c", dir.display());
    }
    Ok(dir)
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str().context("non-UTF-8 path")
}

/// Runs `program args` in `dir`, its output shown only when it fails.
fn run_in(dir: &Path, program: &str, args: &[&str]) -> Result<()> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .with_context(|| format!("starting {program}"))?;
    if !out.status.success() {
        let tail = |b: &[u8]| {
            let s = String::from_utf8_lossy(b);
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(20)..].join("\n")
        };
        bail!(
            "`{program} {}` in {} failed ({}):\n{}\n{}",
            args.join(" "),
            dir.display(),
            out.status,
            tail(&out.stdout),
            tail(&out.stderr)
        );
    }
    Ok(())
}

/// What one run of `rdkafka_performance` did.
#[derive(Debug, Default, Clone, Copy)]
pub(super) struct ClientRun {
    /// Records delivered (producer: acknowledged; consumer: received).
    pub(super) records: u64,
    /// The tool's own figure: from its first send (or first record received) to the last
    /// acknowledgement (or record).
    pub(super) records_per_sec: f64,
    /// The process's whole life, connections and metadata included.
    pub(super) wall: Duration,
    /// The client's user + system CPU seconds (GNU time).
    pub(super) cpu_s: f64,
}

/// Runs `rdkafka_performance` with `args` (its options, `-X` properties among them), niced to
/// `nice` (0: as the bench), killed after `timeout`; its summary parsed.
pub(super) fn run(bin: &Path, args: &[String], nice: i32, timeout: Duration) -> Result<ClientRun> {
    if !Path::new("/usr/bin/time").is_file() {
        bail!("the cost bench measures its client's CPU with GNU time: apt-get install time");
    }
    let marker = "CLIENT-CPU";
    let mut cmd = Command::new("nice");
    cmd.args(["-n", &nice.to_string(), "/usr/bin/time", "-f"])
        .arg(format!("{marker} %U %S"))
        .arg(bin)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let child = cmd.spawn().context("starting rdkafka_performance")?;
    let pid = child.id();
    let waiter = std::thread::spawn(move || child.wait_with_output());
    while !waiter.is_finished() {
        if t0.elapsed() > timeout {
            // nice exec'd time, whose child is the tool: end both.
            let _ = Command::new("pkill")
                .args(["-P", &pid.to_string()])
                .status();
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = t0.elapsed();
    let out = waiter
        .join()
        .map_err(|_| anyhow::anyhow!("waiting for rdkafka_performance panicked"))??;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() || wall > timeout {
        let tail: Vec<&str> = stdout.lines().chain(stderr.lines()).collect();
        bail!(
            "rdkafka_performance {} failed ({}, {:.0} s):\n{}",
            args.join(" "),
            out.status,
            wall.as_secs_f64(),
            tail[tail.len().saturating_sub(20)..].join("\n")
        );
    }
    let cpu_s = stderr
        .lines()
        .find_map(|l| l.strip_prefix(marker))
        .map(|rest| {
            rest.split_whitespace()
                .filter_map(|f| f.parse::<f64>().ok())
                .sum()
        })
        .context("no CPU figures from GNU time")?;
    let mut run = parse_summary(&stdout)
        .with_context(|| format!("no summary in rdkafka_performance's output:\n{stdout}"))?;
    run.wall = wall;
    run.cpu_s = cpu_s;
    Ok(run)
}

/// The last summary line: "% 1000 messages produced (1024000 bytes), 1000 delivered (offset
/// 333, 0 failed) in 512ms: 1953 msgs/s and 2.00 MB/s, ..." or "% 1000 messages (1024000
/// bytes) consumed in 100ms: 10000 msgs/s (10.24 MB/s)".
fn parse_summary(out: &str) -> Option<ClientRun> {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with("% ") && l.contains(" msgs/s"))?;
    let number_before = |label: &str| -> Option<f64> {
        let at = line.find(label)?;
        line[..at].split_whitespace().last()?.parse().ok()
    };
    let records = if line.contains(" delivered ") {
        number_before(" delivered ")?
    } else {
        number_before(" messages (")?
    };
    Some(ClientRun {
        records: records as u64,
        records_per_sec: number_before(" msgs/s")?,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_summaries() {
        let produced = "% Sending 1000 messages of size 1024 bytes\n\
            % 1000 messages produced (1024000 bytes), 990 delivered (offset 333, 0 failed) in \
            512ms: 1933 msgs/s and 1.98 MB/s, 0 produce failures, 0 in queue, no compression\n";
        let p = parse_summary(produced).unwrap();
        assert_eq!(p.records, 990);
        assert_eq!(p.records_per_sec, 1933.0);
        let consumed = "% 500 messages (512000 bytes) consumed in 100ms: 5000 msgs/s \
            (5.12 MB/s)\n% Consumer reached end of t [0] message queue at offset 500\n";
        let c = parse_summary(consumed).unwrap();
        assert_eq!(c.records, 500);
        assert_eq!(c.records_per_sec, 5000.0);
    }
}
