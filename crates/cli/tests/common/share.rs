//! Share consumers (KIP-932) driven by Kafka 4.4.0's own `KafkaShareConsumer`:
//! `tests/java/ShareConsumers.java`, compiled here with `javac` against Kafka's jars, prints
//! every decision (accept, release, reject) with the record's partition, offset, value and
//! delivery count; [`Run`] reads those lines back. Used by `stock_share_groups.rs` and by the
//! broker swap of `node_swap.rs` (a share group consuming while a Kafka broker becomes
//! kraftd and back).

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::kafka_jars::{classpath, javac, log4j_option};

/// `javac` of the driver into `root/classes`.
pub fn compile(root: &Path) -> PathBuf {
    javac(root, "ShareConsumers.java")
}

/// One decision a share consumer printed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    pub kind: String,
    pub member: u32,
    pub partition: i32,
    pub offset: i64,
    pub value: u32,
    pub delivery_count: i16,
}

/// A finished run of the driver: its decisions, in the order printed, and its raw output.
pub struct Run {
    pub decisions: Vec<Decision>,
    pub stdout: String,
    pub stderr: String,
    pub done: bool,
}

impl Run {
    pub fn parse(stdout: String, stderr: String, success: bool) -> Run {
        let decisions = stdout
            .lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                if f.len() != 6 {
                    return None;
                }
                Some(Decision {
                    kind: f[0].to_ascii_lowercase(),
                    member: f[1].parse().ok()?,
                    partition: f[2].parse().ok()?,
                    offset: f[3].parse().ok()?,
                    value: f[4].parse().ok()?,
                    delivery_count: f[5].parse().ok()?,
                })
            })
            .collect();
        Run {
            decisions,
            done: success && stdout.lines().any(|l| l.starts_with("DONE ")),
            stdout,
            stderr,
        }
    }

    pub fn of(&self, kind: &str) -> impl Iterator<Item = &Decision> + '_ {
        let kind = kind.to_string();
        self.decisions.iter().filter(move |d| d.kind == kind)
    }

    pub fn values(&self, kind: &str) -> BTreeMap<u32, usize> {
        let mut counts = BTreeMap::new();
        for d in self.of(kind) {
            *counts.entry(d.value).or_insert(0) += 1;
        }
        counts
    }

    /// The driver's output and the cluster's `logs`, for a failure's message.
    pub fn context(&self, logs: &str) -> String {
        format!(
            "--- driver stdout ---\n{}\n--- driver stderr (tail) ---\n{}\n{logs}",
            self.stdout,
            tail(&self.stderr, 80),
        )
    }

    /// Nothing lost, nothing confirmed handed out again: every value in `0..records` has an
    /// accept the broker confirmed, and after a value's first confirmed accept no member is
    /// handed that value again (what a share group promises across broker failures and
    /// swaps; an unconfirmed accept may be delivered again).
    pub fn assert_accepted_once_confirmed(&self, records: u32, logs: impl Fn() -> String) {
        assert!(
            self.done,
            "not every record was accepted\n{}",
            self.context(&logs())
        );
        for value in 0..records {
            let first = self
                .decisions
                .iter()
                .position(|d| d.value == value && d.kind == "accept")
                .unwrap_or_else(|| {
                    panic!("value {value} never accepted\n{}", self.context(&logs()))
                });
            if let Some(again) = self.decisions[first + 1..]
                .iter()
                .find(|d| d.value == value)
            {
                panic!(
                    "value {value} accepted ({:?}), then delivered again ({again:?})\n{}",
                    self.decisions[first],
                    self.context(&logs())
                );
            }
        }
    }
}

pub fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// A running `ShareConsumers <bootstrap> <args...>` (args: topic, group, records, members,
/// options); its stdout and stderr go to `<topic>.out` / `<topic>.err` under the root.
pub struct Driver {
    child: Child,
    pub out_path: PathBuf,
    err_path: PathBuf,
}

impl Driver {
    pub fn start(root: &Path, classes: &Path, bootstrap: &str, args: &[&str]) -> Driver {
        let name = args.first().copied().unwrap_or("run");
        let out_path = root.join(format!("{name}.out"));
        let err_path = root.join(format!("{name}.err"));
        let child = Command::new("java")
            .args(["-Xmx384m", "-XX:TieredStopAtLevel=1", &log4j_option()])
            .arg("-cp")
            .arg(format!("{}:{}", classes.display(), classpath()))
            .arg("ShareConsumers")
            .arg(bootstrap)
            .args(args)
            .stdin(Stdio::null())
            .stdout(File::create(&out_path).unwrap())
            .stderr(File::create(&err_path).unwrap())
            .spawn()
            .expect("java starts");
        Driver {
            child,
            out_path,
            err_path,
        }
    }

    /// How many decisions of `kind` it printed so far.
    pub fn count(&self, kind: &str) -> usize {
        let prefix = format!("{kind} ");
        std::fs::read_to_string(&self.out_path)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.to_ascii_lowercase().starts_with(&prefix))
            .count()
    }

    /// Waits until it printed at least `n` accepts, for at most 120 s.
    pub fn wait_accepted(&self, n: usize, logs: impl Fn() -> String) {
        let deadline = Instant::now() + Duration::from_secs(120);
        while self.count("accept") < n {
            assert!(
                Instant::now() < deadline,
                "fewer than {n} records accepted after 120 s\n{}\n{}",
                std::fs::read_to_string(&self.out_path).unwrap_or_default(),
                logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits for it to exit (it gives up by itself at its `--timeout-s`).
    pub fn finish(mut self) -> Run {
        let status = self.child.wait().expect("the driver runs");
        let stdout = std::fs::read_to_string(&self.out_path).unwrap_or_default();
        let stderr = std::fs::read_to_string(&self.err_path).unwrap_or_default();
        Run::parse(stdout, stderr, status.success())
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
