//! A stock-client script run in the background while a test acts on the cluster (kills
//! and restarts brokers): its stdout lines read as they come (`started`, `acked N`, the
//! JSON summary), waits on them with deadlines; and one partition's leader and ISR as the
//! brokers' Metadata says, through confluent-kafka. Shared by the tests that kill leaders
//! under a running client (`stock_data_plane.rs`, `stock_compaction_failover.rs`).
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::python::{python, run_inline, script_path};

/// A running script whose stdout lines arrive on a channel (read by a thread), its stderr
/// going to a file.
pub struct Script {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: PathBuf,
}

impl Script {
    pub fn spawn(dir: &Path, name: &str, args: &[&str]) -> Script {
        Script::spawn_with_env(dir, name, args, &[])
    }

    /// [`Script::spawn`] with `env` added to the script's environment.
    pub fn spawn_with_env(dir: &Path, name: &str, args: &[&str], env: &[(&str, &str)]) -> Script {
        static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // `KRAFTD_TEST_STDERR_DIR` keeps the script's stderr (librdkafka's debug output with
        // `RDKAFKA_DEBUG`, for the scripts that pass it on) past the test's temporary dir.
        let stderr = match std::env::var("KRAFTD_TEST_STDERR_DIR") {
            Ok(d) => PathBuf::from(d).join(format!("{name}-{}-{run}.stderr", std::process::id())),
            Err(_) => dir.join(format!("{name}-{run}.stderr")),
        };
        let mut child = Command::new(python())
            .arg("-u")
            .arg(script_path(name))
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Script {
            child,
            lines,
            seen: Vec::new(),
            stderr,
        }
    }

    pub fn transcript(&self) -> String {
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        // librdkafka logs every refused connection; the tail is what matters.
        let tail: Vec<&str> = stderr.lines().rev().take(40).collect();
        format!(
            "stdout:\n{}\nstderr (last 40 lines):\n{}",
            self.seen.join("\n"),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        )
    }

    /// Waits up to `secs` for a line satisfying `pred`; that line. Panics (with `context`)
    /// if the script ends or the deadline passes first.
    pub fn wait_line(&mut self, secs: u64, context: &str, pred: impl Fn(&str) -> bool) -> String {
        self.wait_line_or(secs, context, pred, String::new)
    }

    /// [`wait_line`](Self::wait_line), with `logs()` (the nodes' logs, say) in the panic.
    pub fn wait_line_or(
        &mut self,
        secs: u64,
        context: &str,
        pred: impl Fn(&str) -> bool,
        logs: impl Fn() -> String,
    ) -> String {
        match self.try_wait_line(secs, context, pred, &logs) {
            Some(line) => line,
            None => panic!(
                "waited {secs} s: {context}\n{}\n{}",
                self.transcript(),
                logs()
            ),
        }
    }

    /// Waits up to `secs` for a line satisfying `pred`: that line, or `None` once the
    /// deadline passes. Panics (with `context` and `logs()`) if the script ends first.
    pub fn try_wait_line(
        &mut self,
        secs: u64,
        context: &str,
        pred: impl Fn(&str) -> bool,
        logs: impl Fn() -> String,
    ) -> Option<String> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return Some(line);
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => return None,
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = self.child.wait().unwrap();
                    panic!(
                        "script ended ({status}) while {context}\n{}\n{}",
                        self.transcript(),
                        logs()
                    )
                }
            }
        }
    }

    /// Waits for `acked N` with N >= `n`.
    pub fn wait_acked(&mut self, n: u64, secs: u64) {
        self.wait_line(secs, &format!("waiting for {n} acknowledgements"), |l| {
            l.strip_prefix("acked ")
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|v| v >= n)
        });
    }

    /// The highest `acked N` seen so far, draining what is buffered.
    pub fn acked_so_far(&mut self) -> u64 {
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        self.seen
            .iter()
            .filter_map(|l| l.strip_prefix("acked ")?.parse().ok())
            .max()
            .unwrap_or(0)
    }

    /// Waits for the script to exit (up to `secs`); its JSON summary line, asserting it
    /// succeeded (else panics with its transcript and `logs()`).
    pub fn finish(mut self, secs: u64, logs: impl Fn() -> String) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let status = loop {
            while let Ok(line) = self.lines.try_recv() {
                self.seen.push(line);
            }
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!(
                    "script still running after {secs} s\n{}\n{}",
                    self.transcript(),
                    logs()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        // The reader thread sends the remaining lines and ends once stdout closes.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(5)) {
            self.seen.push(line);
        }
        let summary = self
            .seen
            .iter()
            .rev()
            .find(|l| l.starts_with('{'))
            .cloned()
            .unwrap_or_default();
        assert!(
            status.success() && summary.contains("\"ok\": true"),
            "script failed ({status})\n{}\n{}",
            self.transcript(),
            logs()
        );
        summary
    }
}

/// One partition's leader and ISR as the Metadata of `bootstrap` (comma-separated live
/// brokers) says: `(leader, isr)`, leader -1 when none.
pub fn partition_state(bootstrap: &str, topic: &str, partition: i32) -> (i32, Vec<i32>) {
    let script = r#"
import sys
from confluent_kafka.admin import AdminClient
try:
    md = AdminClient({"bootstrap.servers": sys.argv[1]}).list_topics(sys.argv[2], timeout=5)
    pm = md.topics[sys.argv[2]].partitions[int(sys.argv[3])]
    print(pm.leader, *pm.isrs)
except Exception:
    print(-1)
"#;
    let out = run_inline(script, &[bootstrap, topic, &partition.to_string()]);
    let nums: Vec<i32> = String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect();
    match nums.split_first() {
        Some((leader, isr)) => (*leader, isr.to_vec()),
        None => (-1, vec![]),
    }
}

/// What the cluster at `bootstrap` says of `topics` (each partition's leader, ISR, log start
/// and high watermark, and `group`'s committed offsets), for a failure message: when a
/// client stalls, this says where.
pub fn cluster_state(bootstrap: &str, topics: &[&str], group: &str) -> String {
    let script = r#"
import sys
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
bootstrap, group, topics = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    for t in topics:
        for p, pm in sorted(md.topics[t].partitions.items()):
            low, high = c.get_watermark_offsets(TopicPartition(t, p), timeout=5)
            print(f"{t}-{p}: leader {pm.leader} isr {pm.isrs} replicas {pm.replicas} start {low} hw {high}")
    for tp in c.committed([TopicPartition(t, p) for t in topics
                           for p in md.topics[t].partitions], timeout=5):
        print(f"group {group} committed {tp.topic}-{tp.partition}: {tp.offset}")
except Exception as e:
    print(f"cluster state unavailable: {e}")
"#;
    let mut args = vec![bootstrap, group];
    args.extend_from_slice(topics);
    let out = run_inline(script, &args);
    format!(
        "cluster state:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A test that panics mid-run leaves no client behind: one still writing to ports a later
/// test's nodes may be given would skew that test.
impl Drop for Script {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
