//! The stock Python clients the tests drive kraftd with: a virtualenv under
//! `target/stock-clients-venv/` holding kafka-python and confluent-kafka (which bundles
//! librdkafka), created by the test setup itself on first use (PyPI is reachable; nothing is
//! installed by hand). Concurrent test binaries each build into a temporary directory and
//! rename it into place; the first rename wins.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::Instant;

use super::kafka_jars::repo_root;

/// The pinned client versions (the ones the protocol captures were taken with).
pub const PACKAGES: [&str; 2] = ["kafka-python==3.0.12", "confluent-kafka==2.16.1"];

/// The venv's python, creating the venv if needed; panics with one line saying what is
/// missing when it cannot.
pub fn python() -> PathBuf {
    // Tests of one binary run on threads of one process: one of them builds, the others wait.
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = BUILDING.lock().unwrap_or_else(|p| p.into_inner());
    let target = repo_root().join("target");
    let venv = target.join("stock-clients-venv");
    let python = venv.join("bin").join("python");
    if python.exists() {
        return python;
    }
    let started = Instant::now();
    let tmp = target.join(format!("stock-clients-venv.tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let status = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&tmp)
        .status()
        .unwrap_or_else(|e| panic!("the stock-client tests need python3 (with venv): {e}"));
    assert!(status.success(), "python3 -m venv {} failed", tmp.display());
    let status = Command::new(tmp.join("bin").join("pip"))
        .args(["install", "--quiet", "--disable-pip-version-check"])
        .args(PACKAGES)
        .status()
        .expect("running pip");
    assert!(
        status.success(),
        "pip install {} failed (is PyPI reachable?)",
        PACKAGES.join(" ")
    );
    // venvs hard-code their path in scripts, but `bin/python` works from anywhere once
    // renamed, as long as we only run `python -m`/scripts through it.
    if std::fs::rename(&tmp, &venv).is_err() {
        // Another test binary won the race; use its venv.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    eprintln!(
        "created {} in {:.1}s",
        venv.display(),
        started.elapsed().as_secs_f64()
    );
    python
}

/// Waits until every broker of `bootstrap` (a comma-separated list) lists `expected` brokers
/// in its Metadata (all registered and unfenced), for at most 60 s; on timeout panics with
/// what was seen and `logs()`.
pub fn wait_until_brokers_listed(bootstrap: &str, expected: usize, logs: impl Fn() -> String) {
    wait_until_brokers_listed_as(bootstrap, "{}", expected, logs);
}

/// [`wait_until_brokers_listed`] with the client settings `config` (a confluent-kafka config
/// as JSON, such as `security.protocol` and `sasl.*` or `ssl.*`).
pub fn wait_until_brokers_listed_as(
    bootstrap: &str,
    config: &str,
    expected: usize,
    logs: impl Fn() -> String,
) {
    // The fewest brokers any one broker lists.
    let script = r#"
import json, sys
from confluent_kafka.admin import AdminClient
counts = []
for s in sys.argv[1].split(","):
    try:
        conf = dict(json.loads(sys.argv[2]), **{"bootstrap.servers": s})
        counts.append(len(AdminClient(conf).list_topics(timeout=3).brokers))
    except Exception:
        counts.append(0)
print(min(counts))
"#;
    super::eventually(
        "every broker lists every broker (all unfenced)",
        std::time::Duration::from_secs(60),
        logs,
        || {
            let out = run_inline(script, &[bootstrap, config]);
            let seen = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if seen == expected.to_string() {
                Ok(())
            } else {
                Err(format!(
                    "the fewest listed {seen}: {}",
                    String::from_utf8_lossy(&out.stderr)
                ))
            }
        },
    )
}

/// The path of the script `name` under `tests/python/`.
pub fn script_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/python")
        .join(name)
}

/// `python -c script args...` run to its end.
pub fn run_inline(script: &str, args: &[&str]) -> Output {
    Command::new(python())
        .args(["-c", script])
        .args(args)
        .output()
        .unwrap()
}

/// Runs the script `name` (under `tests/python/`) with `args` to its end and asserts it
/// succeeded and printed `all ok`; on failure panics with its output and `logs()`. Its
/// stdout, for a test that reports what the script measured.
pub fn run_until_all_ok(name: &str, args: &[&str], logs: impl Fn() -> String) -> String {
    let out = Command::new(python())
        .arg(script_path(name))
        .args(args)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("all ok"),
        "{name} failed:\n{stdout}\n{stderr}\n{}",
        logs()
    );
    stdout.into_owned()
}
