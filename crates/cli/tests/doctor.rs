//! `kraftd doctor` on real processes: seed 003 reproduced by cutting one broker off from the
//! Raft leader only, and a broker killed.
//!
//! Three controllers, brokers 4 and 5, every node serving `/metrics`. Broker 5 reaches the
//! controllers through proxies of this test (its `controller.quorum.voters` names them).
//! While "cut", the proxy in front of the Raft leader stalls every connection that carries a
//! Fetch (the broker's Raft client) and keeps forwarding the others (its heartbeats to the
//! active controller, on their own connection): as in seed 003 the broker looks alive but
//! its metadata stops. The doctor must name broker 5, the leader, and the growing lag within
//! seconds and exit 2; after healing, exit 0. Then broker 4 is killed: fenced, with its
//! replication-factor-1 partitions offline.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::raw::Raw;
use common::{formatted_cluster, free_port, joined, write_broker_config, Node, BIN};
use kraftd_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kraftd_protocol::messages::CreateTopicsRequest;
use kraftd_protocol::{RequestBody, ResponseBody};

/// Fetch's api key.
const FETCH: i16 = 1;

fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
    s.read_exact(&mut body).ok()?;
    let mut frame = size.to_vec();
    frame.extend_from_slice(&body);
    Some(frame)
}

/// Forwards connections to `upstream`; while `cut`, a connection that carries a Fetch is
/// stalled (nothing more crosses it either way) until a frame arrives after the cut is
/// lifted, which closes it so the client reconnects.
fn proxy(listener: TcpListener, upstream: String, cut: Arc<AtomicBool>) {
    for client in listener.incoming() {
        let Ok(mut client) = client else { continue };
        let Ok(mut server) = TcpStream::connect(&upstream) else {
            continue;
        };
        let stalled = Arc::new(AtomicBool::new(false));
        let (mut client_tx, mut server_rx) =
            (client.try_clone().unwrap(), server.try_clone().unwrap());
        let stalled_rx = Arc::clone(&stalled);
        std::thread::spawn(move || {
            let mut buf = [0u8; 64 * 1024];
            while let Ok(n) = server_rx.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if !stalled_rx.load(Ordering::SeqCst) && client_tx.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            let _ = client_tx.shutdown(Shutdown::Both);
        });
        let cut = Arc::clone(&cut);
        std::thread::spawn(move || {
            while let Some(frame) = read_frame(&mut client) {
                let api_key = i16::from_be_bytes([frame[4], frame[5]]);
                if stalled.load(Ordering::SeqCst) {
                    if cut.load(Ordering::SeqCst) {
                        continue;
                    }
                    break;
                }
                if api_key == FETCH && cut.load(Ordering::SeqCst) {
                    stalled.store(true, Ordering::SeqCst);
                    continue;
                }
                if server.write_all(&frame).is_err() {
                    break;
                }
            }
            let _ = client.shutdown(Shutdown::Both);
            let _ = server.shutdown(Shutdown::Both);
        });
    }
}

struct Doctor {
    args: Vec<String>,
}

impl Doctor {
    /// One `kraftd doctor` run: exit status and stdout.
    fn run(&self) -> (i32, String) {
        let out = Command::new(BIN)
            .arg("doctor")
            .args(&self.args)
            .output()
            .expect("kraftd doctor runs");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr);
        (out.status.code().unwrap_or(-1), format!("{stdout}{stderr}"))
    }

    /// Runs until `done` holds for a run, within `within`; the last run otherwise panics
    /// with `logs()`.
    fn until(
        &self,
        what: &str,
        within: Duration,
        logs: impl Fn() -> String,
        done: impl Fn(i32, &str) -> bool,
    ) -> (i32, String, Duration) {
        let start = Instant::now();
        let mut last = (0, String::new());
        while start.elapsed() < within {
            last = self.run();
            if done(last.0, &last.1) {
                return (last.0, last.1, start.elapsed());
            }
        }
        panic!(
            "{what}: not within {within:?}; last run (exit {}):\n{}\n{}",
            last.0,
            last.1,
            logs()
        );
    }
}

/// Every node's logs under `root` (`node-*/kraftd-*.log`).
fn logs_under(root: &std::path::Path) -> String {
    let mut files: Vec<_> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    joined(
        files.iter().map(|p| {
            format!(
                "== {}\n{}",
                p.display(),
                std::fs::read_to_string(p).unwrap_or_default()
            )
        }),
        "\n",
    )
}

fn metrics_port(node: &Node) -> u16 {
    let port = free_port();
    node.add_config(&[&format!("metrics.port={port}")]);
    port
}

#[test]
fn doctor_names_a_broker_cut_off_from_the_raft_leader_and_a_killed_one() {
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 3, 2);
    // Broker 5's way to each controller is a proxy.
    let mut cuts = Vec::new();
    let mut proxied = Vec::new();
    for c in &controllers {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        cuts.push((c.id, Arc::clone(&cut)));
        let upstream = c.address();
        std::thread::spawn(move || proxy(listener, upstream, cut));
        proxied.push(format!("{}@127.0.0.1:{port}", c.id));
    }
    write_broker_config(&brokers[1], &proxied.join(","));
    let mut metrics = Vec::new();
    for node in controllers.iter().chain(brokers.iter()) {
        metrics.push(format!("127.0.0.1:{}", metrics_port(node)));
    }
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let root_dir = root.path().to_path_buf();
    let logs = move || logs_under(&root_dir);
    let doctor = Doctor {
        args: vec![
            "--bootstrap-controller".into(),
            joined(controllers.iter().map(Node::address), ","),
            "--bootstrap-server".into(),
            joined(brokers.iter().map(Node::address), ","),
            "--metrics".into(),
            metrics.join(","),
            "--sample-ms".into(),
            "1000".into(),
        ],
    };

    // Healthy: exit 0 and one line, once every node is up.
    let (_, out, _) = doctor.until(
        "a healthy cluster",
        Duration::from_secs(60),
        &logs,
        |code, _| code == 0,
    );
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("healthy: quorum leader "), "{out}");
    assert!(out.contains("2 brokers unfenced"), "{out}");
    let leader: i32 = out["healthy: quorum leader ".len()..]
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // Partitions of replication factor 1, two on broker 4 and one on broker 5; and one of
    // replication factor 2 that needs both in its ISR (min.insync.replicas=2).
    let mut raw = Raw::connect(&brokers[0].address());
    let topic =
        |name: &str, replicas: &[&[i32]], configs: Vec<CreatableTopicConfig>| CreatableTopic {
            name: name.into(),
            num_partitions: -1,
            replication_factor: -1,
            assignments: replicas
                .iter()
                .enumerate()
                .map(|(i, r)| CreatableReplicaAssignment {
                    partition_index: i as i32,
                    broker_ids: r.to_vec(),
                    ..Default::default()
                })
                .collect(),
            configs,
            ..Default::default()
        };
    let created = raw.call(
        7,
        RequestBody::CreateTopics(CreateTopicsRequest {
            topics: vec![
                topic("solo", &[&[4], &[4], &[5]], vec![]),
                topic(
                    "pair",
                    &[&[5, 4]],
                    vec![CreatableTopicConfig {
                        name: "min.insync.replicas".into(),
                        value: Some("2".into()),
                        ..Default::default()
                    }],
                ),
            ],
            timeout_ms: 30_000,
            ..Default::default()
        }),
    );
    let ResponseBody::CreateTopics(created) = created else {
        panic!("{created:?}")
    };
    assert!(
        created.topics.iter().all(|t| t.error_code == 0),
        "{created:?}"
    );
    doctor.until(
        "healthy with the topic",
        Duration::from_secs(30),
        &logs,
        |code, out| code == 0 && out.contains("4 partitions,"),
    );

    // Seed 003: broker 5's Raft fetches to the leader stall; its heartbeats do not.
    let cut = &cuts.iter().find(|(id, _)| *id == leader).unwrap().1;
    cut.store(true, Ordering::SeqCst);
    let named = format!("broker 5 does not fetch metadata from the leader {leader}");
    let (code, out, took) = doctor.until(
        "the cut named",
        Duration::from_secs(45),
        &logs,
        |code, out| {
            code == 2
                && out.contains(&named)
                && out.contains("which is not the leader and answered NOT_LEADER_OR_FOLLOWER")
                && out.contains("broker 5's metadata is")
        },
    );
    eprintln!("named after {took:?} (exit {code}):\n{out}");
    assert!(out.starts_with("CRITICAL: "), "{out}");
    assert!(out.contains("and getting older"), "{out}");
    assert!(
        out.contains(&format!("it was told the leader is {leader}")),
        "{out}"
    );
    assert!(
        !out.contains("broker 4"),
        "only broker 5 is at fault:\n{out}"
    );

    // Healed: healthy again.
    cut.store(false, Ordering::SeqCst);
    let (_, out, took) = doctor.until("healed", Duration::from_secs(45), &logs, |code, _| {
        code == 0
    });
    eprintln!("healthy again after {took:?}: {out}");
    assert_eq!(out.lines().count(), 1, "{out}");

    // --watch: a line per round, each against the one before.
    let mut watch = Command::new(BIN)
        .arg("doctor")
        .args(&doctor.args)
        .args(["--watch", "1"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(watch.stdout.take().unwrap()));
    let mut healthy_rounds = 0;
    while healthy_rounds < 2 {
        let line = lines.next().expect("--watch keeps printing").unwrap();
        assert!(
            line.starts_with("--- ") || line.starts_with("healthy: "),
            "{line}"
        );
        healthy_rounds += usize::from(line.starts_with("healthy: "));
    }
    let _ = watch.kill();
    let _ = watch.wait();

    // Broker 4 killed: fenced, its partitions offline.
    brokers[0].kill9();
    let (_, out, took) = doctor.until(
        "broker 4 fenced",
        Duration::from_secs(45),
        &logs,
        |code, out| {
            code == 2
                && out.contains("broker 4 is fenced")
                && out.contains("partitions are offline")
        },
    );
    eprintln!("broker 4 named after {took:?}:\n{out}");
    assert!(
        out.contains(
            "2 partitions are offline (no leader): solo-0 (replicas [4]), solo-1 (replicas [4])"
        ),
        "{out}"
    );
    assert!(out.contains("cannot read /metrics at"), "{out}");
    assert!(
        out.contains(
            "1 partition is under min ISR (acks=all produce fails): pair-0 (ISR [5], \
             min.insync.replicas 2)"
        ),
        "{out}"
    );

    // Two controllers of three killed: no quorum.
    for c in controllers.iter_mut().filter(|c| c.id != leader).take(2) {
        c.kill9();
    }
    let (_, out, took) = doctor.until(
        "the quorum lost",
        Duration::from_secs(45),
        &logs,
        |code, out| code == 2 && out.starts_with("CRITICAL: the metadata quorum has no leader"),
    );
    eprintln!("quorum loss named after {took:?}:\n{out}");
}

#[test]
fn doctor_exits_2_when_nothing_answers() {
    let dead = format!("127.0.0.1:{}", free_port());
    let doctor = Doctor {
        args: vec![
            "--bootstrap-controller".into(),
            dead.clone(),
            "--bootstrap-server".into(),
            dead.clone(),
            "--metrics".into(),
            dead.clone(),
            "--sample-ms".into(),
            "100".into(),
        ],
    };
    let (code, out) = doctor.run();
    assert_eq!(code, 2, "{out}");
    assert!(
        out.starts_with("CRITICAL: the metadata quorum has no leader that answers"),
        "{out}"
    );
    assert!(
        out.contains(&format!("CRITICAL: no broker answers: {dead}")),
        "{out}"
    );
    assert!(
        out.contains(&format!("WARNING: cannot read /metrics at {dead}")),
        "{out}"
    );
    let (code, out) = Doctor { args: vec![] }.run();
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("give at least one of"), "{out}");
}
