//! Brokers with several log dirs (JBOD, KIP-858): the cluster the log-dir tests share
//! (`stock_jbod.rs`, `stock_log_dirs.rs`, `stock_cordoned_log_dirs.rs`), and where
//! `kafka-log-dirs` shows their replicas.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::kafka_jars::log_dirs_json;
use super::{format, formatted_quorum, voters, write_broker_config, Node};

/// A broker's first `n` (at most three) log dirs, absolute when the tests' root is; the
/// first holds the metadata log.
pub fn log_dirs_of(node: &Node, n: usize) -> Vec<PathBuf> {
    assert!(n <= 3, "at most three log dirs, not {n}");
    ["data", "data2", "data3"]
        .iter()
        .take(n)
        .map(|d| node.dir.join(d))
        .collect()
}

/// One controller and brokers 2 and 3, each broker with `n_dirs` log dirs
/// ([`log_dirs_of`]) and `extra` properties, started.
pub fn jbod_cluster(root: &Path, n_dirs: usize, extra: &[&str]) -> (Vec<Node>, Vec<Node>) {
    jbod_cluster_with(root, n_dirs, extra, |_| {})
}

/// [`jbod_cluster`], `prepare` called with each broker before its dirs are formatted (to
/// mount a file system on one).
pub fn jbod_cluster_with(
    root: &Path,
    n_dirs: usize,
    extra: &[&str],
    mut prepare: impl FnMut(&Node),
) -> (Vec<Node>, Vec<Node>) {
    let (cluster_id, mut controllers) = formatted_quorum(root, 1);
    let voters = voters(&controllers);
    let mut brokers: Vec<Node> = (2..=3).map(|id| Node::broker(root, id)).collect();
    for node in &brokers {
        std::fs::create_dir_all(&node.dir).unwrap();
        write_broker_config(node, &voters);
        let dirs = log_dirs_of(node, n_dirs);
        let config = std::fs::read_to_string(node.config_path()).unwrap();
        let all: Vec<String> = dirs.iter().map(|d| d.display().to_string()).collect();
        let config = config.replace(
            &format!("log.dirs={}\n", dirs[0].display()),
            &format!("log.dirs={}\n", all.join(",")),
        );
        std::fs::write(node.config_path(), config).unwrap();
        node.add_config(extra);
        prepare(node);
        format(node, &cluster_id);
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    (controllers, brokers)
}

/// A broker's first two log dirs ([`log_dirs_of`]).
pub fn two_log_dirs(node: &Node) -> [PathBuf; 2] {
    log_dirs_of(node, 2)
        .try_into()
        .expect("log_dirs_of gives two dirs")
}

/// (partition, broker) → the absolute dir `kafka-log-dirs --describe --broker-list
/// <brokers>` shows each current (not future) replica of `topic` in; the tool's output when
/// it printed no JSON (a broker down, say).
pub fn replica_dirs(
    bootstrap: &str,
    brokers: &str,
    topic: &str,
) -> Result<BTreeMap<(i32, i32), String>, String> {
    let json = log_dirs_json(bootstrap, brokers)?;
    let described: serde_json::Value =
        serde_json::from_str(&json).map_err(|e| format!("{e}: {json}"))?;
    let bad = || format!("kafka-log-dirs printed an unexpected JSON: {json}");
    let mut dirs = BTreeMap::new();
    for b in described["brokers"].as_array().ok_or_else(bad)? {
        let broker = b["broker"].as_i64().ok_or_else(bad)? as i32;
        for ld in b["logDirs"].as_array().ok_or_else(bad)? {
            let dir = ld["logDir"].as_str().ok_or_else(bad)?;
            for p in ld["partitions"].as_array().ok_or_else(bad)? {
                if p["isFuture"].as_bool().ok_or_else(bad)? {
                    continue;
                }
                let name = p["partition"].as_str().ok_or_else(bad)?;
                let (t, partition) = name.rsplit_once('-').ok_or_else(bad)?;
                if t == topic {
                    let partition = partition.parse().map_err(|_| bad())?;
                    dirs.insert((partition, broker), dir.to_string());
                }
            }
        }
    }
    Ok(dirs)
}
