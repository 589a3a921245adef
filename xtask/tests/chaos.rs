//! `cargo xtask chaos` as a test: 87 s of faults with the transactional workload (`--txn`),
//! the metadata workload (`--meta`) and the faultable disks (`--disks`), seed 10299488,
//! whose schedule draws each of the 12 fault kinds once in its first 12 faults, the twelfth
//! starting 70.8 s in by the schedule (a slow link, a controller and a broker isolated,
//! kill -9 with the unflushed tail lost, an isolated node, a one-way cut, a full disk,
//! SIGSTOP, kill -9, the active controller isolated, kill -9 of the transaction
//! coordinator's broker, a disk failing with EIO, a leader cut from its followers; no seed
//! below 60,000,000 does it sooner), plus the restarts the disk faults cost, on the kraftd
//! binary of this build, failing on any anomaly the checker finds (the transactional,
//! consumer-group, metadata and disk ones among them), a cluster that does not heal or a
//! group not Stable after the faults. It needs root (the harness's network namespaces,
//! tmpfs and FUSE mounts; CI runs as root): without it the harness fails with a message
//! saying so, and so does this test.
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
            "1.45",
            "--seed",
            "10299488",
            "--txn",
            "--disks",
            "--meta",
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
        "cargo xtask chaos --seed 10299488 --txn --disks --meta failed:\n{stdout}\n{stderr}"
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
        summary.contains("consumer groups") && !summary.contains(" 0 offsets committed"),
        "no group committed an offset:\n{stdout}"
    );
    assert!(
        summary.contains("metadata operations       acknowledged {\"config\""),
        "no metadata operation acknowledged:\n{stdout}"
    );
    for line in summary.lines().skip(2).take(12) {
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
