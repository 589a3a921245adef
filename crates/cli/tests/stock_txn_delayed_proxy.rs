//! KAFKA-17754 with a stock client and an injected network delay: Kafka 4.4.0's Java
//! producer (transactions V2, from the jars, run by `tests/java/DelayedEndTxn.jsh`) talks
//! to a kraftd broker through a proxy in this test (the broker advertises the proxy, so
//! every connection goes through it). The proxy holds the producer's first EndTxn; the
//! client times out, retries and commits transaction N, opens N+1 and writes to it; then
//! the proxy delivers the held EndTxn(commit) of N. It must be refused (its epoch was
//! fenced by N's commit) and must not end N+1: after the client aborts N+1, a
//! read_committed consumer sees N's record and never N+1's.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::kafka_jars;
use common::python::{python, run_inline, wait_until_brokers_listed};
use common::{all_logs, formatted_cluster, free_port, stop_gracefully};

/// EndTxn's api key.
const END_TXN: i16 = 26;

/// The held EndTxn's fate: the error code the broker answered it with.
#[derive(Default)]
struct Held {
    answered: Option<i16>,
}

fn read_frame(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut size = [0u8; 4];
    s.read_exact(&mut size).ok()?;
    let mut body = vec![0u8; i32::from_be_bytes(size) as usize];
    s.read_exact(&mut body).ok()?;
    let mut frame = size.to_vec();
    frame.extend_from_slice(&body);
    Some(frame)
}

/// Forwards every connection to `upstream`; the first EndTxn sent after `dir/hold`
/// exists is kept until `dir/release` exists, then delivered on its own connection, whose
/// answer is recorded in `held` and `dir/released` written.
fn proxy(listener: TcpListener, upstream: String, dir: PathBuf, held: Arc<Mutex<Held>>) {
    let taken = Arc::new(Mutex::new(false));
    for client in listener.incoming() {
        let Ok(mut client) = client else { continue };
        let Ok(mut server) = TcpStream::connect(&upstream) else {
            continue;
        };
        let (mut client_rx, mut server_rx) =
            (client.try_clone().unwrap(), server.try_clone().unwrap());
        // Broker → client.
        std::thread::spawn(move || {
            let mut buf = [0u8; 64 * 1024];
            while let Ok(n) = server_rx.read(&mut buf) {
                if n == 0 || client.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        });
        let (dir, held, taken, upstream) = (
            dir.clone(),
            Arc::clone(&held),
            Arc::clone(&taken),
            upstream.clone(),
        );
        // Client → broker, frame by frame.
        std::thread::spawn(move || {
            while let Some(frame) = read_frame(&mut client_rx) {
                let api_key = i16::from_be_bytes([frame[4], frame[5]]);
                let hold = api_key == END_TXN && dir.join("hold").exists() && {
                    let mut t = taken.lock().unwrap();
                    !std::mem::replace(&mut *t, true)
                };
                if hold {
                    let (dir, held, upstream) = (dir.clone(), Arc::clone(&held), upstream.clone());
                    std::thread::spawn(move || deliver_late(frame, &upstream, &dir, &held));
                    continue;
                }
                if server.write_all(&frame).is_err() {
                    break;
                }
            }
        });
    }
}

fn deliver_late(frame: Vec<u8>, upstream: &str, dir: &Path, held: &Mutex<Held>) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !dir.join("release").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut s = TcpStream::connect(upstream).unwrap();
    s.write_all(&frame).unwrap();
    let response = read_frame(&mut s).expect("the broker answers the late EndTxn");
    // size, correlation id, tagged fields (EndTxn v5 is flexible), throttle, error.
    let error = i16::from_be_bytes([response[13], response[14]]);
    held.lock().unwrap().answered = Some(error);
    std::fs::write(dir.join("released"), b"").unwrap();
}

#[test]
fn a_delayed_end_txn_of_a_committed_transaction_never_ends_the_next_one() {
    python();
    let root = tempfile::tempdir().unwrap();
    let (_id, mut controllers, mut brokers) = formatted_cluster(root.path(), 1, 1);
    let proxy_port = free_port();
    brokers[0].add_config(&[
        &format!("advertised.listeners=PLAINTEXT://127.0.0.1:{proxy_port}"),
        "transaction.state.log.num.partitions=4",
        "offsets.topic.num.partitions=4",
    ]);
    for node in controllers.iter_mut().chain(brokers.iter_mut()) {
        node.start();
    }
    let held = Arc::new(Mutex::new(Held::default()));
    let listener = TcpListener::bind(("127.0.0.1", proxy_port)).unwrap();
    let dir = root.path().join("proxy");
    std::fs::create_dir_all(&dir).unwrap();
    {
        let (upstream, dir, held) = (brokers[0].address(), dir.clone(), Arc::clone(&held));
        std::thread::spawn(move || proxy(listener, upstream, dir, held));
    }
    let bootstrap = format!("127.0.0.1:{proxy_port}");
    wait_until_brokers_listed(&bootstrap, 1, || all_logs(&brokers));
    let create = run_inline(
        r#"
import sys, time
sys.path.insert(0, sys.argv[2])
from clients_common import create_topic
from confluent_kafka import admin as cadmin
create_topic(cadmin.AdminClient({"bootstrap.servers": sys.argv[1]}), "jepsen", 1, 1, {}, time.time() + 60)
"#,
        &[
            &bootstrap,
            common::python::script_path("").to_str().unwrap(),
        ],
    );
    assert!(
        create.status.success(),
        "{}",
        String::from_utf8_lossy(&create.stderr)
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java/DelayedEndTxn.jsh");
    let out = Command::new("jshell")
        .arg(format!("--class-path={}", kafka_jars::classpath()))
        .arg(format!("-J-Dbootstrap={bootstrap}"))
        .arg(format!("-J-Ddir={}", dir.display()))
        .arg("-J-Dtopic=jepsen")
        .arg(format!("-J{}", kafka_jars::log4j_option()))
        .arg("-R-Dbootstrap=".to_string() + &bootstrap)
        .arg(format!("-R-Ddir={}", dir.display()))
        .arg("-R-Dtopic=jepsen")
        .arg(format!("-R{}", kafka_jars::log4j_option()))
        .arg(&script)
        .stdin(Stdio::null())
        .output()
        .expect("jshell runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        stdout.contains("done"),
        "the Java producer did not finish\n{stdout}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        all_logs(&brokers)
    );
    let answered = held.lock().unwrap().answered;
    eprintln!("{stdout}\nthe delayed EndTxn was answered {answered:?}");
    assert!(
        matches!(answered, Some(code) if code != 0),
        "the delayed EndTxn was answered {answered:?}\n{stdout}"
    );
    let read = run_inline(
        r#"
import sys, time
from confluent_kafka import Consumer, TopicPartition
c = Consumer({"bootstrap.servers": sys.argv[1], "group.id": "jepsen-check", "isolation.level": "read_committed",
              "auto.offset.reset": "earliest", "enable.partition.eof": True})
c.assign([TopicPartition("jepsen", 0, 0)])
vals, t0 = [], time.time()
while time.time() - t0 < 30:
    m = c.poll(0.5)
    if m is None:
        continue
    if m.error():
        if m.error().code() == -191:
            break
        continue
    vals.append(m.value().decode())
print(",".join(vals))
"#,
        &[&bootstrap],
    );
    let values = String::from_utf8_lossy(&read.stdout).trim().to_string();
    assert_eq!(values, "N", "read_committed saw {values:?}\n{stdout}");
    stop_gracefully(&mut brokers);
    stop_gracefully(&mut controllers);
}
