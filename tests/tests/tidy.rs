//! Architecture rules from ARCHITECTURE.md, checked against `cargo metadata` and the sources.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The layers, lowest first: a crate may depend only on crates of lower layers. Crates of
/// one layer (`log`, `net` and `coordinator`: the data files, the network and the
/// coordinators' state machines, side by side over `protocol`) know nothing of each other.
const LAYERS: &[&[&str]] = &[
    &["kraftd-protocol"],
    &["kraftd-log", "kraftd-net", "kraftd-coordinator"],
    &["kraftd-raft"],
    &["kraftd-controller"],
    &["kraftd-broker"],
    &["kraftd-cli"],
];

/// The crates the user's design card names, each with its role; a finer split may add
/// crates (every one on a layer), never remove these.
const CARD_CRATES: &[&str] = &[
    "kraftd-protocol",
    "kraftd-log",
    "kraftd-raft",
    "kraftd-controller",
    "kraftd-broker",
    "kraftd-cli",
    "kraftd-tests",
    "xtask",
];

/// The layer of a workspace crate, `None` for one outside the layers (xtask, tests).
fn layer(name: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&name))
}

/// The kraftd crates `name` depends on (normal dependencies).
fn kraftd_deps(meta: &Value, name: &str) -> Vec<String> {
    let mut deps: Vec<String> = normal_deps(meta, name)
        .into_iter()
        .filter(|d| d.starts_with("kraftd-"))
        .collect();
    deps.sort();
    deps
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ lives in the workspace root")
        .to_path_buf()
}

fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["metadata", "--format-version", "1"])
        .current_dir(root())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

fn package<'a>(meta: &'a Value, name: &str) -> &'a Value {
    meta["packages"]
        .as_array()
        .and_then(|ps| ps.iter().find(|p| p["name"] == name))
        .unwrap_or_else(|| panic!("package {name} is missing"))
}

/// Names of the normal (non-dev) dependencies of `name`.
fn normal_deps(meta: &Value, name: &str) -> Vec<String> {
    package(meta, name)["dependencies"]
        .as_array()
        .map(|ds| {
            ds.iter()
                .filter(|d| d["kind"].is_null())
                .filter_map(|d| d["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn workspace_has_the_shape_the_user_gave() {
    let meta = metadata();
    let mut members: Vec<String> = meta["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|id| {
            let id = id.as_str()?;
            meta["packages"]
                .as_array()?
                .iter()
                .find(|p| p["id"] == id)
                .and_then(|p| p["name"].as_str().map(str::to_string))
        })
        .collect();
    members.sort();
    for card in CARD_CRATES {
        assert!(
            members.iter().any(|m| m == card),
            "the card's crate {card} is missing"
        );
    }
    for member in &members {
        assert!(
            layer(member).is_some() || ["kraftd-tests", "xtask"].contains(&member.as_str()),
            "workspace member {member} sits on no layer (tests/tidy.rs LAYERS)"
        );
    }
    let cli = package(&meta, "kraftd-cli");
    let bins: Vec<&str> = cli["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "bin"))
        })
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert_eq!(bins, ["kraftd"], "the binary is named kraftd");
}

#[test]
fn dependencies_run_one_way() {
    let meta = metadata();
    for (i, crates) in LAYERS.iter().enumerate() {
        for name in *crates {
            for dep in normal_deps(&meta, name) {
                if let Some(j) = layer(&dep) {
                    assert!(j < i, "{name} depends on {dep}, which is not below it");
                }
            }
        }
    }
}

#[test]
fn net_knows_only_the_protocol() {
    let meta = metadata();
    assert_eq!(
        kraftd_deps(&meta, "kraftd-net"),
        ["kraftd-protocol"],
        "the transport speaks Kafka's protocol and knows no role"
    );
}

#[test]
fn coordinator_knows_only_the_protocol() {
    let meta = metadata();
    assert_eq!(
        kraftd_deps(&meta, "kraftd-coordinator"),
        ["kraftd-protocol"],
        "the coordinators' state machines know the records and requests, not the engine"
    );
    let external: Vec<String> = normal_deps(&meta, "kraftd-coordinator")
        .into_iter()
        .filter(|d| !d.starts_with("kraftd-"))
        .collect();
    for banned in ["tokio", "kraftd-net", "rustls"] {
        assert!(
            !external.iter().any(|d| d == banned),
            "kraftd-coordinator depends on {banned}"
        );
    }
}

#[test]
fn coordinators_are_sans_io() {
    assert_sans_io(
        "crates/coordinator/src",
        "a coordinator takes time, requests and records as inputs",
    );
}

#[test]
fn the_shard_contract_knows_no_coordinator() {
    let dir = root().join("crates/coordinator/src");
    for file in ["shard.rs", "context.rs", "timer.rs", "partitioner.rs"] {
        let src = std::fs::read_to_string(dir.join(file)).unwrap();
        for banned in ["crate::group", "crate::transaction"] {
            assert!(
                !src.contains(banned),
                "crates/coordinator/src/{file} imports {banned}: the contract and its vocabulary \
                 are every coordinator's, not one's"
            );
        }
    }
}

#[test]
fn only_net_speaks_tls() {
    let meta = metadata();
    for crates in LAYERS {
        for name in *crates {
            if *name == "kraftd-net" {
                continue;
            }
            for banned in ["rustls", "tokio-rustls"] {
                assert!(
                    !normal_deps(&meta, name).iter().any(|d| d == banned),
                    "{name} depends on {banned}: TLS lives in kraftd-net"
                );
            }
        }
    }
}

#[test]
fn protocol_knows_wire_bytes_and_nothing_else() {
    let meta = metadata();
    // No async runtime, no I/O crates anywhere in its normal dependency tree.
    let resolve = &meta["resolve"]["nodes"];
    let id_of = |name: &str| package(&meta, name)["id"].as_str().unwrap().to_string();
    let mut stack = vec![id_of("kraftd-protocol")];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        let node = resolve
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id.as_str())
            .unwrap();
        for dep in node["deps"].as_array().unwrap() {
            let normal = dep["dep_kinds"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k["kind"].is_null());
            if normal {
                stack.push(dep["pkg"].as_str().unwrap().to_string());
            }
        }
    }
    for id in &seen {
        for banned in ["tokio", "mio", "async-std", "tracing"] {
            assert!(
                !id.contains(&format!("#{banned}@")) && !id.contains(&format!("/{banned}#")),
                "kraftd-protocol pulls in {id}"
            );
        }
    }
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = p
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if p.is_dir() && name != "target" && !name.starts_with('.') {
            rust_files(&p, out);
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

/// The non-test part of a source file (inline `#[cfg(test)]` modules sit at the end; a
/// module's tests moved to a file of their own are named `tests.rs`, declared
/// `#[cfg(test)] mod tests;`).
fn non_test_source(path: &Path) -> String {
    if path.file_name().is_some_and(|n| n == "tests.rs") {
        return String::new();
    }
    let text = std::fs::read_to_string(path).unwrap();
    match text.find("#[cfg(test)]") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

#[test]
fn only_log_opens_data_files_and_protocol_has_no_io() {
    let crates = root().join("crates");
    for krate in [
        "protocol",
        "net",
        "coordinator",
        "raft",
        "controller",
        "broker",
    ] {
        let mut files = Vec::new();
        rust_files(&crates.join(krate).join("src"), &mut files);
        for f in files {
            let src = non_test_source(&f);
            for banned in [
                "File::create",
                "File::open",
                "OpenOptions",
                "fs::write",
                "fs::read",
            ] {
                assert!(
                    !src.contains(banned),
                    "{} uses {banned}: only crates/log opens data files",
                    f.display()
                );
            }
            if krate == "protocol" {
                for banned in [
                    "tokio::",
                    "std::net::",
                    "std::thread::",
                    "Instant::now",
                    "SystemTime::now",
                ] {
                    assert!(
                        !src.contains(banned),
                        "{} uses {banned}: protocol is pure",
                        f.display()
                    );
                }
            }
        }
    }
}

/// The tokens a sans-IO state machine's non-test sources never contain: time, randomness and
/// I/O come in as arguments.
const SANS_IO_BANNED: [&str; 8] = [
    "tokio::",
    "std::net::",
    "std::fs::",
    "std::thread::",
    "std::time::",
    "Instant::now",
    "SystemTime",
    "thread_rng",
];

/// Asserts every source file under `dir` (relative to the workspace root) is sans IO.
fn assert_sans_io(dir: &str, why: &str) {
    let mut files = Vec::new();
    rust_files(&root().join(dir), &mut files);
    assert!(!files.is_empty(), "{dir} holds no sources");
    for f in files {
        let src = non_test_source(&f);
        for banned in SANS_IO_BANNED {
            assert!(
                !src.contains(banned),
                "{} uses {banned}: {why}",
                f.display()
            );
        }
    }
}

#[test]
fn raft_core_is_sans_io() {
    assert_sans_io(
        "crates/raft/src/core",
        "the Raft core takes time, randomness and I/O as inputs",
    );
}

#[test]
fn every_source_file_opens_with_a_module_doc() {
    let mut files = Vec::new();
    for dir in ["crates", "xtask", "tests", "fuzz"] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 200, "found only {} files", files.len());
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(
            text.trim_start().starts_with("//!"),
            "{} does not open with a `//!` doc saying what it owns",
            f.display()
        );
    }
}

#[test]
fn architecture_md_maps_every_crate() {
    // Every workspace member, by its directory (`crates/net`, `xtask`, `tests`), has a section
    // of its own, so a crate added later cannot go unmapped.
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let meta = metadata();
    let root = root().canonicalize().expect("the workspace root");
    for id in meta["workspace_members"].as_array().unwrap() {
        let package = meta["packages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["id"] == *id)
            .expect("every workspace member is a package");
        let manifest = PathBuf::from(package["manifest_path"].as_str().unwrap());
        let dir = manifest
            .parent()
            .and_then(|d| d.canonicalize().ok())
            .and_then(|d| d.strip_prefix(&root).ok().map(Path::to_path_buf))
            .expect("members live under the workspace root")
            .to_string_lossy()
            .replace('\\', "/");
        let heading = format!("### `{dir}`");
        assert!(
            text.lines().any(|l| l.starts_with(&heading)),
            "ARCHITECTURE.md has no section for {} ({heading})",
            package["name"]
        );
    }
    assert!(
        text.contains("Architecture Invariant"),
        "ARCHITECTURE.md lists no invariants"
    );
}
