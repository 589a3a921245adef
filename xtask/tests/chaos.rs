//! `cargo xtask chaos` as a test: 96 s of faults with the transactional workload (`--txn`:
//! a transactional writer and an exactly-once pipeline), the metadata workload (`--meta`),
//! the faultable disks (`--disks`) and the clock jumps (`--clock`), seed 3744842, whose
//! schedule draws each of the 13 fault kinds once in its first 13 faults, the thirteenth
//! starting 77.4 s in by the schedule (no seed below 200,000,000 does it sooner), plus the
//! restarts the disk faults cost, on the kraftd binary of this build, failing on any
//! anomaly the checker finds (the transactional, pipeline, consumer-group, metadata, disk
//! and clock ones among them), a cluster that does not heal or a group not Stable after the
//! faults. It needs root (the harness's network namespaces,
//! tmpfs and FUSE mounts; CI runs as root) and a C compiler, `cc` (the clock jump's
//! LD_PRELOAD interposer): without them the harness fails with a message saying so, and so
//! does this test.
//!
//! The kraftd binary is `target/debug/kraftd`, beside this package's own binary: `cargo
//! test --workspace` builds it (the cli package's tests need it); run alone, build it first
//! (`cargo build --bin kraftd && cargo test -p xtask --test chaos`).

use std::path::Path;
use std::process::Command;

#[test]
fn every_fault_kind_once_loses_nothing_breaks_no_transaction_or_group_and_heals() {
    let xtask = Path::new(env!("CARGO_BIN_EXE_xtask"));
    let kraftd = xtask.with_file_name("kraftd");
    assert!(
        kraftd.exists(),
        "{} is missing: build it first (cargo build --bin kraftd)",
        kraftd.display()
    );
    let dir = xtask
        .parent()
        .and_then(Path::parent)
        .expect("target directory")
        .join("chaos")
        .join(format!("test-{}", std::process::id()));
    let out = Command::new(xtask)
        .args([
            "chaos",
            "--minutes",
            "1.6",
            "--seed",
            "3744842",
            "--txn",
            "--disks",
            "--meta",
            "--clock",
            "--kraftd-bin",
        ])
        .arg(&kraftd)
        .arg("--dir")
        .arg(&dir)
        .env("RUST_BACKTRACE", "0")
        .output()
        .expect("running cargo xtask chaos");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("no anomalies"),
        "cargo xtask chaos --seed 3744842 --txn --disks --meta --clock failed:\n{stdout}\n{stderr}"
    );
    // Every kind was injected (the schedule is the seed's).
    let summary = stdout
        .split("chaos summary")
        .nth(1)
        .expect("the summary table");
    assert!(
        summary.contains(" committed, "),
        "no transactions in the summary:\n{stdout}"
    );
    assert!(
        summary.contains("exactly-once pipeline")
            && !summary.contains(", 0 in the committed output"),
        "the exactly-once pipeline committed nothing:\n{stdout}"
    );
    assert!(
        summary.contains("consumer groups") && !summary.contains(" 0 offsets committed"),
        "no group committed an offset:\n{stdout}"
    );
    assert!(
        summary.contains("metadata operations       acknowledged {\"config\""),
        "no metadata operation acknowledged:\n{stdout}"
    );
    for line in summary.lines().skip(2).take(13) {
        let count: u32 = line
            .split_whitespace()
            .last()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        assert!(
            count > 0,
            "a fault kind was never injected: {line}\n{stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
