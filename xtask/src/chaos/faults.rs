//! The faults and how the seed picks them. One fault at a time: it is injected, held for a
//! while, undone, and the cluster gets a short gap before the next. The seed fixes the
//! schedule — each fault's kind, the indexes that pick its targets, its hold and the gap
//! after it, drawn in the same order whatever happens — while targets named by role (the
//! active controller, a partition's leader) are resolved against the running cluster when
//! the fault starts, so two runs of a seed make the same kinds of cuts at the same times but
//! may hit other nodes.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::checker::Anomaly;
use super::clock;
use super::disks::Disks;
use super::net::{self, Lab};
use super::nodes::{self, Nodes};

/// Every kind of fault, in the order the summary lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Kind {
    /// SIGKILL, then a restart on the same data after the hold.
    Kill,
    /// SIGKILL of a broker, then the tail of each of its topic partitions' active segment
    /// cut off (up to 64 KiB, maybe mid-batch), as a power loss takes writes not yet flushed
    /// (Kafka does not fsync data by default), then a restart after the hold.
    KillLoseTail,
    /// SIGSTOP, then SIGCONT after the hold.
    Pause,
    /// One node cut from every other node, both ways.
    IsolateNode,
    /// The active controller cut from every other node (of a dynamic quorum, whichever
    /// controller leads it now).
    IsolateActiveController,
    /// A controller and a broker cut from the rest (a minority of each; the controller one of
    /// the voters now).
    IsolateMinority,
    /// A partition's leader cut from its followers only (the controllers still reach it).
    LeaderFromFollowers,
    /// One node's packets to another dropped, the other way untouched.
    OneWay,
    /// One node's link made slow both ways (a token bucket of a few hundred kbit/s with
    /// queueing latency, `net.rs` [`Lab::slow`]): it stays reachable, but its replication,
    /// heartbeats and client traffic crawl.
    SlowLink,
    /// SIGKILL of the broker that coordinates the transactional workload's transactional id
    /// (as FindCoordinator answers), then a restart after the hold. Drawn only with the
    /// transactional workload ([`TXN_KINDS`]).
    KillTxnCoordinator,
    /// A broker's faultable disk (its second log dir, `disks.rs`) filled with a ballast file
    /// until ENOSPC; at the end of the hold the ballast is deleted and the broker, if it took
    /// the dir offline, restarted (SIGTERM, then started again), as an operator would: Kafka
    /// brings an offline dir back only at a restart. Drawn only with `--disks`.
    DiskFull,
    /// A broker's faultable disk failing: every write, fsync, create, truncate, rename and
    /// unlink in its second log dir answered with EIO by the harness's FUSE passthrough
    /// (`fusefs.rs`); undone as [`Kind::DiskFull`] (the passthrough passing again, the
    /// broker restarted if the dir went offline). Drawn only with `--disks`.
    DiskEio,
    /// One node's wall clock jumped forward or back ([`clock::JUMPS_MS`]) through the
    /// harness's LD_PRELOAD interposer (`clock.rs`), set right after the hold. While it
    /// lasts `kraftd doctor` must report the skew, and no broker may delete a segment of the
    /// workload's topic by time-based retention (its `retention.ms` is above every jump).
    /// Drawn only with `--clock`.
    ClockJump,
    /// A voter's metadata disk lost (`--voters` only): SIGKILL of one of the voters now, its
    /// metadata dir emptied and formatted again with `--no-initial-controllers` (a new
    /// directory id), restarted after the hold. It comes back an observer, its old replica
    /// key still a voter that nothing answers for, until the voter workload replaces the key
    /// as an operator does (KIP-853: remove the old key, add the new one). Never while a
    /// voter lost before is not yet replaced: two dead keys of three voters would leave the
    /// quorum without a majority for good (a kill instead).
    VoterDiskLost,
}

/// The kinds the schedule draws from without the transactional workload; with it,
/// [`TXN_KINDS`]; with the faultable disks, those and [`DISK_KINDS`] ([`kinds`]). Separate
/// lists, so that a seed's schedule without them stays what it was.
pub(super) const KINDS: [Kind; 9] = [
    Kind::Kill,
    Kind::KillLoseTail,
    Kind::Pause,
    Kind::IsolateNode,
    Kind::IsolateActiveController,
    Kind::IsolateMinority,
    Kind::LeaderFromFollowers,
    Kind::OneWay,
    Kind::SlowLink,
];

/// [`KINDS`] and the kill of the transaction coordinator's broker.
pub(super) const TXN_KINDS: [Kind; 10] = [
    Kind::Kill,
    Kind::KillLoseTail,
    Kind::Pause,
    Kind::IsolateNode,
    Kind::IsolateActiveController,
    Kind::IsolateMinority,
    Kind::LeaderFromFollowers,
    Kind::OneWay,
    Kind::SlowLink,
    Kind::KillTxnCoordinator,
];

/// The disk faults, drawn with `--disks`.
pub(super) const DISK_KINDS: [Kind; 2] = [Kind::DiskFull, Kind::DiskEio];

/// The clock jump, drawn with `--clock` (after the disk kinds).
pub(super) const CLOCK_KINDS: [Kind; 1] = [Kind::ClockJump];

/// The voter's lost disk, drawn with `--voters` (last).
pub(super) const VOTER_KINDS: [Kind; 1] = [Kind::VoterDiskLost];

/// The kinds a run's schedule draws from.
pub(super) fn kinds(txn: bool, disks: bool, clock: bool, voters: bool) -> Vec<Kind> {
    let mut kinds = if txn {
        TXN_KINDS.to_vec()
    } else {
        KINDS.to_vec()
    };
    if disks {
        kinds.extend(DISK_KINDS);
    }
    if clock {
        kinds.extend(CLOCK_KINDS);
    }
    if voters {
        kinds.extend(VOTER_KINDS);
    }
    kinds
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Kill => "kill -9 + restart",
            Kind::KillLoseTail => "kill -9 + unflushed tail lost",
            Kind::Pause => "SIGSTOP + SIGCONT",
            Kind::IsolateNode => "isolate a node",
            Kind::IsolateActiveController => "isolate the active controller",
            Kind::IsolateMinority => "isolate a controller + a broker",
            Kind::LeaderFromFollowers => "cut a leader from its followers",
            Kind::OneWay => "one-way partition",
            Kind::SlowLink => "slow link",
            Kind::KillTxnCoordinator => "kill -9 txn coordinator + restart",
            Kind::DiskFull => "disk full (a log dir)",
            Kind::DiskEio => "disk failing, EIO (a log dir)",
            Kind::ClockJump => "clock jump (one node)",
            Kind::VoterDiskLost => "voter's disk lost (new dir id)",
        }
    }

    /// A fault of the network (cuts, slow links) rather than of a process (kill, pause), of
    /// its disk (which ends in a restart: never beside a process fault) or of its clock
    /// (never beside a kill or a pause, so that the doctor can read the node's clock).
    fn is_network(self) -> bool {
        !matches!(
            self,
            Kind::Kill
                | Kind::KillLoseTail
                | Kind::Pause
                | Kind::KillTxnCoordinator
                | Kind::DiskFull
                | Kind::DiskEio
                | Kind::ClockJump
                | Kind::VoterDiskLost
        )
    }
}

/// SplitMix64: a seeded generator for the schedule (xtask has no `rand`; this is enough for
/// picking faults, and the same seed gives the same sequence on every machine).
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// One scheduled fault, as the seed drew it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Planned {
    pub(super) kind: Kind,
    /// Indexes that pick targets among the candidates of its kind.
    pick: [u64; 2],
    pub(super) hold: Duration,
    pub(super) gap: Duration,
}

/// The schedule's bounds: how long a fault is held and the quiet gap after it.
pub(super) struct Bounds {
    pub(super) hold_ms: (u64, u64),
    pub(super) gap_ms: (u64, u64),
}

/// The next fault of the schedule, of one of `kinds` (always five draws).
pub(super) fn plan(rng: &mut Rng, bounds: &Bounds, kinds: &[Kind]) -> Planned {
    let kind = kinds[rng.below(kinds.len() as u64) as usize];
    let pick = [rng.next_u64(), rng.next_u64()];
    let span = |rng: &mut Rng, (lo, hi): (u64, u64)| {
        Duration::from_millis(lo + rng.below(hi.saturating_sub(lo) + 1))
    };
    let hold = span(rng, bounds.hold_ms);
    let gap = span(rng, bounds.gap_ms);
    Planned {
        kind,
        pick,
        hold,
        gap,
    }
}

/// With `--overlap`: whether a second fault joins `first` for its hold (one in two), and
/// which — of the other family than `first`'s (a process fault beside a network fault, so
/// that the two never fight over one process: a pause of a killed node, two restarts), as
/// a pause with a partition, or a kill with the active controller cut off, which together
/// may take a majority of the controllers. Always four draws, so that the schedule after it
/// is the seed's whatever the coin said.
pub(super) fn plan_overlap(rng: &mut Rng, first: &Planned, kinds: &[Kind]) -> Option<Planned> {
    let joins = rng.below(2) == 1;
    let index = rng.next_u64();
    let pick = [rng.next_u64(), rng.next_u64()];
    let family: Vec<Kind> = kinds
        .iter()
        .copied()
        .filter(|k| k.is_network() != first.kind.is_network())
        .collect();
    (joins && !family.is_empty()).then(|| Planned {
        kind: family[(index % family.len() as u64) as usize],
        pick,
        ..*first
    })
}

/// What undoes an injected fault.
#[derive(Debug)]
pub(super) enum Undo {
    Restart(u32),
    Resume(u32),
    Heal,
    /// Broker `id`'s disk made healthy again, and the broker restarted if the dir went
    /// offline. `since`: when the fault hit; `hosts`: whether the dir held a partition of
    /// the workload's topic then (so that a write must have hit it).
    Disk {
        id: u32,
        since: Instant,
        hosts: bool,
    },
    /// Node `id`'s clock set right again, after checking what its jump of `offset_ms`
    /// must not have done.
    Clock {
        id: u32,
        offset_ms: i64,
    },
}

/// How long a broker has to take a failed dir offline once a write can hit it (the
/// workload writes every partition many times a second).
const OFFLINE_WITHIN: Duration = Duration::from_secs(15);
/// How long a broker has to stop on SIGTERM before the harness kills it.
const STOP_WITHIN: Duration = Duration::from_secs(60);

/// Injects `planned` and says what it did (the kind actually injected, which differs from
/// the planned one only when its target could not be found, as no partition with a leader:
/// then a node is isolated instead) and how to undo it.
pub(super) fn inject(
    planned: &Planned,
    nodes: &mut Nodes,
    lab: &mut Lab,
    disks: Option<&Disks>,
    topic: &str,
    transactional_id: &str,
) -> Result<(Kind, String, Undo)> {
    let all = nodes.all_ids();
    let pick = |i: usize, of: &[u32]| of[(planned.pick[i] % of.len() as u64) as usize];
    let isolate = |lab: &mut Lab, id: u32| -> Result<String> {
        let rest: Vec<u32> = all.iter().copied().filter(|&n| n != id).collect();
        lab.cut_between(&[id], &rest)?;
        Ok(format!("node {id} cut from {rest:?}"))
    };
    Ok(match planned.kind {
        Kind::Kill => {
            let id = pick(0, &all);
            nodes.kill9(id)?;
            (Kind::Kill, format!("kill -9 node {id}"), Undo::Restart(id))
        }
        Kind::KillLoseTail => {
            let id = pick(0, &nodes.broker_ids());
            nodes.kill9(id)?;
            let bytes = 1 + planned.pick[1] % (64 * 1024);
            let cut = nodes.lose_tail(id, topic, bytes)?;
            (
                Kind::KillLoseTail,
                format!("kill -9 node {id}, then {}", cut.join(", ")),
                Undo::Restart(id),
            )
        }
        Kind::VoterDiskLost => {
            let controllers = nodes.controller_ids();
            let keys = nodes::current_voter_keys(lab, &controllers).unwrap_or_default();
            let own_disks = !keys.is_empty()
                && keys
                    .iter()
                    .all(|(id, dir)| nodes.metadata_dir_id(*id).is_ok_and(|own| own == *dir));
            if own_disks {
                let voters: Vec<u32> = keys.iter().map(|k| k.0).collect();
                let id = pick(0, &voters);
                nodes.kill9(id)?;
                let (old, new) = nodes.replace_metadata_disk(id)?;
                (
                    Kind::VoterDiskLost,
                    format!(
                        "kill -9 voter {id} (of {voters:?}), its metadata disk lost: formatted \
                         again with --no-initial-controllers, directory id {old} -> {new}"
                    ),
                    Undo::Restart(id),
                )
            } else {
                let id = pick(0, &controllers);
                nodes.kill9(id)?;
                let why = if keys.is_empty() {
                    "no leader to name the voters"
                } else {
                    "a voter whose disk was lost is not replaced yet"
                };
                (
                    Kind::Kill,
                    format!("{why}: kill -9 node {id} instead"),
                    Undo::Restart(id),
                )
            }
        }
        Kind::Pause => {
            let id = pick(0, &all);
            nodes.signal_pause(id, true)?;
            (Kind::Pause, format!("SIGSTOP node {id}"), Undo::Resume(id))
        }
        Kind::IsolateNode => {
            let id = pick(0, &all);
            (Kind::IsolateNode, isolate(lab, id)?, Undo::Heal)
        }
        Kind::IsolateActiveController => {
            match nodes::active_controller(lab, &nodes.controller_ids()) {
                Some(id) => (
                    Kind::IsolateActiveController,
                    format!("active controller: {}", isolate(lab, id)?),
                    Undo::Heal,
                ),
                None => {
                    let id = pick(0, &all);
                    let what = format!("no active controller found; {}", isolate(lab, id)?);
                    (Kind::IsolateNode, what, Undo::Heal)
                }
            }
        }
        Kind::IsolateMinority => {
            // A voter: of a dynamic quorum (`--voters`), one of the voters now, so that the
            // cut takes one of the quorum's majority whichever nodes that is by then.
            let controllers = nodes::current_voters(lab, &nodes.controller_ids())
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| nodes.controller_ids());
            let minority = [pick(0, &controllers), pick(1, &nodes.broker_ids())];
            let rest: Vec<u32> = all
                .iter()
                .copied()
                .filter(|n| !minority.contains(n))
                .collect();
            lab.cut_between(&minority, &rest)?;
            (
                Kind::IsolateMinority,
                format!("nodes {minority:?} cut from {rest:?}"),
                Undo::Heal,
            )
        }
        Kind::LeaderFromFollowers => match leader_and_followers(nodes, lab, topic, planned) {
            Some((partition, leader, followers)) => {
                lab.cut_between(&[leader], &followers)?;
                (
                    Kind::LeaderFromFollowers,
                    format!(
                        "partition {partition}'s leader {leader} cut from its followers \
                         {followers:?}"
                    ),
                    Undo::Heal,
                )
            }
            None => {
                let id = pick(0, &all);
                let what = format!("no partition leader found; {}", isolate(lab, id)?);
                (Kind::IsolateNode, what, Undo::Heal)
            }
        },
        Kind::KillTxnCoordinator => {
            let running: Vec<u32> = nodes
                .broker_ids()
                .into_iter()
                .filter(|&id| nodes.running(id))
                .collect();
            let probe: &Lab = lab;
            let coordinator = running
                .iter()
                .find_map(|&id| nodes::txn_coordinator(probe, id, transactional_id).ok())
                .filter(|id| running.contains(id));
            match coordinator {
                Some(id) => {
                    nodes.kill9(id)?;
                    (
                        Kind::KillTxnCoordinator,
                        format!("kill -9 node {id}, the coordinator of {transactional_id}"),
                        Undo::Restart(id),
                    )
                }
                None => {
                    let id = pick(0, &nodes.broker_ids());
                    nodes.kill9(id)?;
                    (
                        Kind::Kill,
                        format!("no transaction coordinator found; kill -9 node {id}"),
                        Undo::Restart(id),
                    )
                }
            }
        }
        Kind::SlowLink => {
            let id = pick(0, &all);
            lab.slow(id)?;
            (
                Kind::SlowLink,
                format!("node {id}'s link slowed both ways ({})", net::SLOW_LINK),
                Undo::Heal,
            )
        }
        kind @ (Kind::DiskFull | Kind::DiskEio) => {
            let disks = disks.context("a disk fault without --disks")?;
            let id = pick(0, &nodes.broker_ids());
            let dir = disks.log_dir(id)?;
            let before = nodes::describe_log_dirs(lab, id).unwrap_or_default();
            let topics = in_dir(&before, &dir).map_or(&[][..], |(_, topics)| topics);
            let hosts = topics.iter().any(|t| t == topic);
            // The other topics with partitions there (the groups' offsets, the
            // transactions' state, `--meta`'s): a broker writes their checkpoints too.
            let others = topics.iter().filter(|t| *t != topic).count();
            let since = Instant::now();
            let what = if kind == Kind::DiskFull {
                let bytes = disks.fill(id)?;
                format!(
                    "node {id}'s disk {} filled ({:.1} MiB of ballast)",
                    dir.display(),
                    bytes as f64 / (1 << 20) as f64
                )
            } else {
                disks.fail(id)?;
                format!("node {id}'s disk {} failing (EIO on writes)", dir.display())
            };
            let holds = if hosts { "with" } else { "without" };
            (
                kind,
                format!(
                    "{what}, a log dir {holds} partitions of {topic} (and with partitions of \
                     {others} other topics)"
                ),
                Undo::Disk { id, since, hosts },
            )
        }
        Kind::ClockJump => {
            let clocks = nodes.clocks().context("a clock jump without --clock")?;
            let id = pick(0, &all);
            let offset_ms =
                clock::JUMPS_MS[(planned.pick[1] % clock::JUMPS_MS.len() as u64) as usize];
            clocks.set(id, offset_ms)?;
            (
                Kind::ClockJump,
                format!("node {id}'s clock {}", clock::describe(offset_ms)),
                Undo::Clock { id, offset_ms },
            )
        }
        Kind::OneWay => {
            let from = pick(0, &all);
            let others: Vec<u32> = all.iter().copied().filter(|&n| n != from).collect();
            let to = pick(1, &others);
            lab.cut(from, to)?;
            (
                Kind::OneWay,
                format!("packets from node {from} to node {to} dropped"),
                Undo::Heal,
            )
        }
    })
}

/// A partition of `topic` (picked by the plan) with its leader and followers, as a running
/// broker's metadata says.
fn leader_and_followers(
    nodes: &Nodes,
    lab: &Lab,
    topic: &str,
    planned: &Planned,
) -> Option<(i32, u32, Vec<u32>)> {
    let metadata = nodes
        .broker_ids()
        .into_iter()
        .filter(|&id| nodes.running(id))
        .find_map(|id| nodes::metadata(lab, id, topic).ok())?;
    let partitions: Vec<_> = metadata
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .filter(|p| p.leader_id >= 0)
        .collect();
    if partitions.is_empty() {
        return None;
    }
    let p = partitions[(planned.pick[1] % partitions.len() as u64) as usize];
    let followers = p
        .replica_nodes
        .iter()
        .filter(|&&r| r != p.leader_id)
        .map(|&r| r as u32)
        .collect();
    Some((p.partition_index, p.leader_id as u32, followers))
}

/// The entry of `dir` in a broker's DescribeLogDirs answer: its error code and topics.
fn in_dir<'a>(
    described: &'a [(String, i16, Vec<String>)],
    dir: &std::path::Path,
) -> Option<(i16, &'a [String])> {
    let dir = dir.display().to_string();
    described
        .iter()
        .find(|(d, ..)| d.trim_end_matches('/') == dir)
        .map(|(_, code, topics)| (*code, &topics[..]))
}

/// Undoes a fault: what it did, and the anomalies undoing it showed (a disk fault's dir
/// that did not go offline, a broker that did not stop cleanly).
pub(super) fn undo(
    undo: &Undo,
    nodes: &mut Nodes,
    lab: &mut Lab,
    disks: Option<&Disks>,
    topic: &str,
) -> Result<(String, Vec<Anomaly>)> {
    let done = |text: String| Ok((text, Vec::new()));
    match *undo {
        Undo::Restart(id) => {
            nodes.spawn(lab, id)?;
            done(format!("restarted node {id}"))
        }
        Undo::Resume(id) => {
            nodes.signal_pause(id, false)?;
            done(format!("SIGCONT node {id}"))
        }
        Undo::Heal => {
            lab.heal()?;
            done("network healed (cuts removed, links at full speed)".to_string())
        }
        Undo::Clock { id, offset_ms } => {
            let (said, anomalies) = clock_checks(nodes, lab, topic, id, offset_ms);
            let clocks = nodes.clocks().context("a clock jump without --clock")?;
            clocks.set(id, 0)?;
            let said = said.map_or(String::new(), |line| format!("; the doctor said: {line}"));
            Ok((format!("node {id}'s clock set right{said}"), anomalies))
        }
        Undo::Disk { id, since, hosts } => {
            let disks = disks.context("a disk fault without --disks")?;
            let dir = disks.log_dir(id)?;
            let mut anomalies = Vec::new();
            // Offline, as the broker says (KAFKA_STORAGE_ERROR for the dir)? A dir a write
            // must hit gets until OFFLINE_WITHIN after the fault; one a cut keeps the
            // writes from is not waited for.
            let offline = || {
                nodes::describe_log_dirs(lab, id)
                    .ok()
                    .and_then(|d| in_dir(&d, &dir).map(|(code, _)| code == 56))
                    .unwrap_or(false)
            };
            let mut is_offline = offline();
            while !is_offline && hosts && !lab.cut_off(id) && since.elapsed() < OFFLINE_WITHIN {
                std::thread::sleep(Duration::from_millis(250));
                is_offline = offline();
            }
            let after = since.elapsed().as_secs_f64();
            disks.heal(id)?;
            let mut text = format!("node {id}'s disk healthy again");
            if is_offline {
                match nodes.stop_gracefully(id, STOP_WITHIN) {
                    Ok(how) => text += &format!("; its dir was offline, so it was {how}"),
                    Err(why) => {
                        text += &format!("; its dir was offline, but it {why}");
                        anomalies.push(Anomaly {
                            kind: "unclean stop",
                            detail: format!(
                                "node {id}, stopped with SIGTERM to bring its offline dir {} \
                                 back, {why}; its log ends:\n{}",
                                dir.display(),
                                nodes.log_tail(id, 30)
                            ),
                            at_ms: Some(super::unix_ms()),
                        });
                    }
                }
                nodes.spawn(lab, id)?;
                text += " and restarted";
            } else if hosts && !lab.cut_off(id) {
                text += &format!("; its dir was NOT offline {after:.1} s after the fault");
                anomalies.push(Anomaly {
                    kind: "dir not offline",
                    detail: format!(
                        "node {id}'s log dir {} (holding partitions the workload writes) was \
                         faulty for {after:.1} s and DescribeLogDirs did not answer \
                         KAFKA_STORAGE_ERROR for it",
                        dir.display()
                    ),
                    at_ms: Some(super::unix_ms()),
                });
            } else {
                text += "; its dir stayed online (no write reached it)";
            }
            Ok((text, anomalies))
        }
    }
}

/// What a clock `offset_ms` away on node `id` must not have done by the end of its hold:
/// a broker deleting a segment of `topic` by time-based retention (every partition's first
/// segment on its disks must still start at offset 0: the topic's `retention.ms` is above
/// every jump), and, on kraftd, `kraftd doctor` over every node's `/metrics` not reporting
/// the skew (its clock-skew rule, `crates/cli/src/doctor/rules.rs`). Also the doctor's line
/// that reports it.
fn clock_checks(
    nodes: &Nodes,
    lab: &Lab,
    topic: &str,
    id: u32,
    offset_ms: i64,
) -> (Option<String>, Vec<Anomaly>) {
    let mut said = None;
    let mut anomalies = Vec::new();
    let anomaly = |kind, detail| Anomaly {
        kind,
        detail,
        at_ms: Some(super::unix_ms()),
    };
    let jump = clock::describe(offset_ms);
    match nodes
        .log_dirs(id)
        .map(|dirs| clock::first_segments(dirs, topic))
    {
        Some(Ok(firsts)) => {
            for (partition, first) in firsts.into_iter().filter(|(_, first)| *first > 0) {
                anomalies.push(anomaly(
                    "retention deleted",
                    format!(
                        "node {id}, its clock {jump}, deleted the first segments of                          {partition}: its log starts at offset {first} (retention.ms {} is                          above the jump)",
                        clock::RETENTION_MS
                    ),
                ));
            }
        }
        Some(Err(e)) => anomalies.push(anomaly(
            "retention deleted",
            format!("node {id}'s segments could not be listed: {e:#}"),
        )),
        None => {}
    }
    if let Some(bin) = nodes.kraftd_bin() {
        let metrics: Vec<String> = nodes
            .all_ids()
            .iter()
            .map(|&n| nodes::metrics_addr(lab, n).to_string())
            .collect();
        // The jumped node ahead of the others, or the others ahead of it.
        let expected = if offset_ms > 0 {
            format!("the clock of node {id} is ahead of node")
        } else {
            format!("is ahead of node {id}'s by at least")
        };
        let out = Command::new(bin)
            .args(["doctor", "--sample-ms", "300", "--metrics"])
            .arg(metrics.join(","))
            .output();
        match out {
            Ok(out) => {
                let text = String::from_utf8_lossy(&out.stdout);
                said = text
                    .lines()
                    .find(|l| l.contains(&expected))
                    .map(|l| l.trim().to_string());
                if said.is_none() {
                    anomalies.push(anomaly(
                        "skew not reported",
                        format!(
                            "node {id}'s clock {jump}, and `kraftd doctor --metrics` did not                              say \"{expected} ...\"; it said:\n{text}{}",
                            String::from_utf8_lossy(&out.stderr)
                        ),
                    ));
                }
            }
            Err(e) => anomalies.push(anomaly(
                "skew not reported",
                format!("kraftd doctor did not run: {e}"),
            )),
        }
    }
    (said, anomalies)
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: Bounds = Bounds {
        hold_ms: (2_000, 12_000),
        gap_ms: (1_000, 4_000),
    };

    #[test]
    fn the_voter_disk_comes_last_and_only_with_voters() {
        for (txn, disks, clock) in [(false, false, false), (true, true, true)] {
            let with = kinds(txn, disks, clock, true);
            assert_eq!(with[..with.len() - 1], kinds(txn, disks, clock, false)[..]);
            assert_eq!(with[with.len() - 1..], VOTER_KINDS);
        }
        assert!(!Kind::VoterDiskLost.is_network());
    }

    #[test]
    fn the_disk_kinds_come_last_and_only_with_disks() {
        // Without --disks a seed draws from the lists it always drew from: its schedule stays.
        assert_eq!(kinds(false, false, false, false), KINDS);
        assert_eq!(kinds(true, false, false, false), TXN_KINDS);
        for txn in [false, true] {
            let with = kinds(txn, true, false, false);
            assert_eq!(
                with[..with.len() - DISK_KINDS.len()],
                kinds(txn, false, false, false)[..]
            );
            // The clock jump after them: a seed's schedule without --clock stays.
            let clock = kinds(txn, true, true, false);
            assert_eq!(clock[..with.len()], with[..]);
            assert_eq!(clock[with.len()..], CLOCK_KINDS);
            assert!(DISK_KINDS
                .iter()
                .all(|k| with.contains(k) && !k.is_network()));
        }
    }

    #[test]
    fn an_overlapping_fault_is_of_the_other_family_and_keeps_the_schedule_in_step() {
        let mut joined = [0; 2];
        for seed in 0..400 {
            let mut rng = Rng::new(seed);
            let first = plan(&mut rng, &B, &TXN_KINDS);
            let second = plan_overlap(&mut rng, &first, &TXN_KINDS);
            // Nine draws whatever the coin said: what follows is the seed's.
            let mut reference = Rng::new(seed);
            for _ in 0..9 {
                reference.next_u64();
            }
            assert_eq!(rng.next_u64(), reference.next_u64(), "seed {seed}");
            if let Some(second) = second {
                assert_ne!(second.kind.is_network(), first.kind.is_network());
                assert_eq!((second.hold, second.gap), (first.hold, first.gap));
                joined[first.kind.is_network() as usize] += 1;
            }
        }
        // Both ways round, about one time in two.
        assert!(joined.iter().all(|&n| n > 40), "{joined:?}");
    }
}
