//! The voter-change workload (`--voters`): while the faults run, the dynamic quorum's voter
//! set is changed with Apache Kafka 4.4.0's own `kafka-metadata-quorum` (its
//! `MetadataQuorumCommand`, from the jars the harness fetches), as an operator does it:
//! `add-controller --command-config <the joining controller's properties>` and
//! `remove-controller --controller-id N --controller-directory-id D`, both through
//! `--bootstrap-controller` (every controller). It keeps 3 voters most of the time: with 3
//! (or fewer) it adds a controller that is not a voter (the spare), and a few seconds later,
//! with 4, removes one of the old voters (the seed picks which, the leader too; not the one
//! just added), which becomes the next spare; when the faults end, a set left with 4 gets
//! its remove before the workload stops. Which change comes next is decided from what the leader says now
//! (DescribeQuorum), as an operator would look before acting; what the set may be afterwards
//! is decided from the answers alone (`voters_checker.rs`).
//!
//! A removed controller is left running on its directory: KIP-853 names a voter by its id and
//! its directory id, a removed voter goes on fetching as an observer, and adding it back with
//! the same directory (what `add-controller` reads from its `meta.properties`) is what Kafka's
//! operations docs do for a controller taken out and put back. A new directory id is a disk
//! that was lost (the fault `voter's disk lost`, `faults.rs`): the voter's old replica key
//! then answers for nobody, and the workload replaces it as Kafka's docs do — the spare added
//! first if the set has 3 voters (so that the set keeps 3 live ones), then the old key
//! removed, the node (an observer on its new directory) the next spare. A stale key is
//! always the first one removed, and one left when the faults end is replaced before the
//! workload stops.
//!
//! Every request and its answer goes to `voters.jsonl` with the tool's start and end times:
//! `{"op":"add"|"remove","id","dir","seen","sent","ms","outcome":"ok"|"refused"|"unknown",
//! "error","answer"}`, after a first `{"initial":{id: directory id}}` and before a last
//! `{"done":true}`. It runs on a thread of the harness beside the fault loop, which reads the
//! new lines into the run's history ([`VoterWorkload::news`]).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use super::faults::Rng;
use super::net::Lab;
use super::nodes::{controller_addr, Nodes, System};
use super::voters_checker::{DUPLICATE_VOTER, VOTER_NOT_FOUND};
use crate::bench::kafka::java_output;
use crate::cluster::describe_quorum_partition;

/// The admin client's timeouts for the tool, so that a request to a quorum in trouble ends
/// (unknown) within about half a minute rather than Kafka's default minute: the workload
/// stops with the faults and the heal waits for it.
const ADMIN_TIMEOUTS: &str = "request.timeout.ms=10000\ndefault.api.timeout.ms=30000\n";
/// How long the changes after the faults (a lost disk's replacement, the set back to 3)
/// may take, tries again included.
const FINAL_CHANGES_WITHIN: Duration = Duration::from_secs(120);
/// Past this the tool is killed (its outcome unknown).
const TOOL_LIMIT: Duration = Duration::from_secs(60);
/// The voters the workload keeps most of the time.
const VOTERS: usize = 3;

/// A controller the workload may add or remove.
#[derive(Debug, Clone)]
pub(super) struct Controller {
    pub(super) id: u32,
    pub(super) addr: SocketAddr,
    /// Its metadata log dir, whose `meta.properties` holds its directory id (read at each
    /// change: a lost disk gets a new one).
    pub(super) meta_dir: PathBuf,
    /// Its properties file, which `add-controller --command-config` reads.
    pub(super) config: PathBuf,
}

/// The running workload.
pub(super) struct VoterWorkload {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<()>>>,
    file: PathBuf,
    /// How much of `voters.jsonl` [`VoterWorkload::news`] has read.
    read: usize,
}

impl VoterWorkload {
    /// Starts the workload over `controllers` (the initial voters among them), with the
    /// Kafka tools' `classpath`, writing under `dir`.
    /// [`VoterWorkload::start`] on every controller of `nodes` (voters and spares), with
    /// Kafka's tools from the jars (fetched under `root` when the nodes are kraftd's).
    pub(super) fn start_on(
        root: &Path,
        lab: &Lab,
        nodes: &Nodes,
        dir: &Path,
        seed: u64,
    ) -> Result<VoterWorkload> {
        let classpath = match nodes.system() {
            System::Kafka(classpath) => classpath.clone(),
            System::Kraftd(_) => crate::bench::kafka::kafka_classpath(root)?,
        };
        let mut controllers = Vec::new();
        for id in nodes.controller_ids() {
            controllers.push(Controller {
                id,
                addr: controller_addr(lab, id),
                meta_dir: nodes.metadata_dir(id)?.to_path_buf(),
                config: nodes
                    .config(id)
                    .context("a controller's config")?
                    .to_path_buf(),
            });
        }
        VoterWorkload::start(classpath, controllers, dir, seed)
    }

    pub(super) fn start(
        classpath: String,
        controllers: Vec<Controller>,
        dir: &Path,
        seed: u64,
    ) -> Result<VoterWorkload> {
        let file = dir.join("voters.jsonl");
        let mut out = File::create(&file)?;
        let bootstrap = controllers
            .iter()
            .map(|c| c.addr.to_string())
            .collect::<Vec<_>>()
            .join(",");
        // The tool's configs: the joining controller's own properties (node.id, listeners,
        // controller.listener.names, log.dirs: what add-controller sends) with the admin
        // client's timeouts; for remove-controller the timeouts alone.
        let admin = dir.join("voters-admin.properties");
        std::fs::write(&admin, ADMIN_TIMEOUTS)?;
        let mut add_configs = BTreeMap::new();
        for c in &controllers {
            let text = std::fs::read_to_string(&c.config)
                .with_context(|| format!("reading {}", c.config.display()))?;
            let path = dir.join(format!("add-controller-{}.properties", c.id));
            std::fs::write(&path, format!("{text}\n{ADMIN_TIMEOUTS}"))?;
            add_configs.insert(c.id, path);
        }
        let (_, voters) = leader_voters(&controllers).context(
            "no controller answers DescribeQuorum as the leader as the voter workload starts",
        )?;
        let initial: BTreeMap<String, &str> = voters
            .iter()
            .map(|(id, dir)| (id.to_string(), dir.as_str()))
            .collect();
        writeln!(
            out,
            "{}",
            json!({"initial": initial, "ms": super::unix_ms()})
        )?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::spawn(move || {
            let run = Run {
                classpath,
                controllers,
                bootstrap,
                admin,
                add_configs,
                rng: Rng::new(seed ^ 0x766f_7465_7273), // "voters": not the faults' draws
                out,
            };
            run.until(&stopping)
        });
        Ok(VoterWorkload {
            stop,
            thread: Some(thread),
            file,
            read: 0,
        })
    }

    /// Whether the thread ended by itself (an error writing its file): why.
    pub(super) fn failed(&mut self) -> Option<String> {
        if !self.thread.as_ref()?.is_finished() {
            return None;
        }
        match self.thread.take()?.join() {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(format!("{e:#}")),
            Err(_) => Some("its thread panicked".into()),
        }
    }

    /// The requests and answers written since the last call, one history line each.
    pub(super) fn news(&mut self) -> Vec<String> {
        let Ok(text) = std::fs::read_to_string(&self.file) else {
            return Vec::new();
        };
        // Whole lines only.
        let end = text.rfind('\n').map_or(0, |i| i + 1);
        let lines = text
            .get(self.read..end)
            .unwrap_or("")
            .lines()
            .filter_map(super::voters_checker::describe)
            .collect();
        self.read = end.max(self.read);
        lines
    }

    /// Stops the workload (the faults are over) once its request in flight has its answer.
    pub(super) fn stop(&mut self) -> Result<()> {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            match thread.join() {
                Ok(result) => result?,
                Err(_) => anyhow::bail!("the voter workload's thread panicked"),
            }
        }
        Ok(())
    }
}

impl Drop for VoterWorkload {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The workload's thread.
struct Run {
    classpath: String,
    controllers: Vec<Controller>,
    bootstrap: String,
    admin: PathBuf,
    add_configs: BTreeMap<u32, PathBuf>,
    rng: Rng,
    out: File,
}

impl Run {
    fn until(mut self, stop: &AtomicBool) -> Result<()> {
        let mut voters_now = VOTERS;
        let mut last_added = None;
        while !stop.load(Ordering::SeqCst) {
            // Right after an add, the remove that brings the set back to 3 comes soon.
            let wait_ms = if voters_now > VOTERS {
                2_000 + self.rng.below(3_000)
            } else {
                6_000 + self.rng.below(9_000)
            };
            let until = Instant::now() + Duration::from_millis(wait_ms);
            while Instant::now() < until && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(100));
            }
            if stop.load(Ordering::SeqCst) {
                break;
            }
            let Some((_, voters)) = leader_voters(&self.controllers) else {
                continue;
            };
            voters_now = voters.len();
            let Some((add, id, dir)) = self.next_change(&voters, last_added, true) else {
                continue;
            };
            if add {
                last_added = Some(id);
            }
            self.change(add, id, &dir, &voters)?;
        }
        // The faults are over: a set left with 4 voters gets the remove that completes its
        // pair, and a voter whose disk was lost is replaced, so that the run ends with 3 live
        // voters as it mostly runs. A change refused or timed out (a new voter still
        // catching up) is tried again, for a while.
        let deadline = Instant::now() + FINAL_CHANGES_WITHIN;
        while Instant::now() < deadline {
            let Some((_, voters)) = leader_voters(&self.controllers) else {
                std::thread::sleep(Duration::from_secs(1));
                continue;
            };
            let Some((add, id, dir)) = self.next_change(&voters, last_added, false) else {
                break;
            };
            if add {
                last_added = Some(id);
            }
            if !self.change(add, id, &dir, &voters)? {
                std::thread::sleep(Duration::from_secs(2));
            }
        }
        writeln!(
            self.out,
            "{}",
            json!({"done": true, "ms": super::unix_ms()})
        )?;
        Ok(())
    }

    /// The change to make next given the leader's `voters` (replica keys), as
    /// `(add, id, directory id)`: with 3 voters or fewer a spare (a controller whose id is no
    /// voter's) is added, else a voter removed, a stale key (its node's directory id is
    /// another: a lost disk) first. During the faults (`running`) a set of 3 with nothing
    /// stale is changed too (the spare added); afterwards only to reach 3 live voters.
    fn next_change(
        &mut self,
        voters: &[(u32, String)],
        last_added: Option<u32>,
        running: bool,
    ) -> Option<(bool, u32, String)> {
        let stale: Vec<&(u32, String)> = voters
            .iter()
            .filter(|(id, dir)| self.dir_id(*id).is_some_and(|own| own != *dir))
            .collect();
        if !running && stale.is_empty() && voters.len() == VOTERS {
            return None;
        }
        let spares: Vec<u32> = self
            .controllers
            .iter()
            .map(|c| c.id)
            .filter(|id| voters.iter().all(|(v, _)| v != id))
            .collect();
        if voters.len() <= VOTERS && !spares.is_empty() {
            let id = spares[self.rng.below(spares.len() as u64) as usize];
            return Some((true, id, self.dir_id(id)?));
        }
        if let Some((id, dir)) = stale.first() {
            return Some((false, *id, dir.clone()));
        }
        self.old_voter(voters, last_added)
            .map(|(id, dir)| (false, id, dir))
    }

    /// Controller `id`'s directory id now.
    fn dir_id(&self, id: u32) -> Option<String> {
        let c = self.controllers.iter().find(|c| c.id == id)?;
        super::nodes::directory_id(&c.meta_dir).ok()
    }

    /// An old voter of `voters` the seed picks (the leader too; not the one just added): the
    /// one to remove, which becomes the next spare. `None` with a single voter.
    fn old_voter(
        &mut self,
        voters: &[(u32, String)],
        last_added: Option<u32>,
    ) -> Option<(u32, String)> {
        let old: Vec<&(u32, String)> = voters
            .iter()
            .filter(|(v, _)| Some(*v) != last_added)
            .collect();
        if voters.len() < 2 || old.is_empty() {
            return None;
        }
        let i = self.rng.below(old.len() as u64) as usize;
        Some(old[i].clone())
    }

    /// Runs the tool for one change of the replica key `(id, dir)` and writes the request and
    /// its answer; whether it was acknowledged.
    fn change(
        &mut self,
        add: bool,
        target: u32,
        dir: &str,
        seen: &[(u32, String)],
    ) -> Result<bool> {
        let id = target.to_string();
        let config = if add {
            self.add_configs.get(&target).context("no config")?
        } else {
            &self.admin
        };
        let config = config.to_str().context("non-UTF-8 path")?;
        let mut args = vec![
            "org.apache.kafka.tools.MetadataQuorumCommand",
            "--bootstrap-controller",
            &self.bootstrap,
            "--command-config",
            config,
        ];
        if add {
            args.push("add-controller");
        } else {
            args.extend([
                "remove-controller",
                "--controller-id",
                &id,
                "--controller-directory-id",
                dir,
            ]);
        }
        let sent = super::unix_ms();
        let (outcome, error, answer) = match java_output(&self.classpath, &args, TOOL_LIMIT, false)
        {
            Ok(out) => match out.error {
                None => ("ok", None, out.stdout),
                Some(error) => {
                    let (outcome, name) = classify(&error);
                    (outcome, Some(name), error)
                }
            },
            Err(e) => ("unknown", Some("tool killed".to_string()), format!("{e:#}")),
        };
        writeln!(
            self.out,
            "{}",
            json!({
                "op": if add { "add" } else { "remove" },
                "id": target,
                "dir": dir,
                "seen": seen.iter().map(|v| v.0).collect::<Vec<_>>(),
                "sent": sent,
                "ms": super::unix_ms(),
                "outcome": outcome,
                "error": error,
                // The tool's line, or the end of its error (one line for the history).
                "answer": answer.lines().filter(|l| !l.trim().is_empty()).take(2)
                    .collect::<Vec<_>>().join(" | "),
            })
        )?;
        Ok(outcome == "ok")
    }
}

/// The tool's failure as the checker takes it: a refusal the leader gives before appending
/// anything (`refused`, its error name), or anything else (`unknown`, the exception's name).
/// Kafka's admin client raises each error code as its exception class.
fn classify(error: &str) -> (&'static str, String) {
    for (class, code) in [
        ("DuplicateVoterException", DUPLICATE_VOTER),
        ("VoterNotFoundException", VOTER_NOT_FOUND),
        ("UnsupportedVersionException", "UNSUPPORTED_VERSION"),
        ("InvalidRequestException", "INVALID_REQUEST"),
    ] {
        if error.contains(class) {
            return ("refused", code.to_string());
        }
    }
    let name = error
        .split(|c: char| !(c.is_alphanumeric() || c == '.'))
        .find(|w| w.ends_with("Exception"))
        .and_then(|w| w.rsplit('.').next())
        .unwrap_or("failed");
    ("unknown", name.to_string())
}

/// The leader and its voters' replica keys (id, directory id), as the first controller
/// that answers DescribeQuorum v2 as the leader says.
fn leader_voters(controllers: &[Controller]) -> Option<(u32, Vec<(u32, String)>)> {
    controllers.iter().find_map(|c| {
        let p = describe_quorum_partition(c.addr, 2).ok()?;
        (p.leader_id == c.id as i32).then(|| {
            let keys = p.current_voters.iter();
            let keys = keys.map(|v| (v.replica_id as u32, v.replica_directory_id.to_base64()));
            (c.id, keys.collect())
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tool_s_failures_are_refusals_or_unknown() {
        assert_eq!(
            classify(
                "exit status: 1: org.apache.kafka.common.errors.DuplicateVoterException: The \
                 voter id for ReplicaKey(id=4) is already part of the set of voters"
            ),
            ("refused", DUPLICATE_VOTER.to_string())
        );
        assert_eq!(
            classify("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors.VoterNotFoundException: x"),
            ("refused", VOTER_NOT_FOUND.to_string())
        );
        assert_eq!(
            classify(
                "exit status: 1: org.apache.kafka.common.errors.TimeoutException: Timed out \
                 waiting for a node assignment."
            ),
            ("unknown", "TimeoutException".to_string())
        );
        assert_eq!(
            classify("exit status: 1: boom"),
            ("unknown", "failed".into())
        );
    }
}
