//! `cargo xtask chaos --minutes N --seed S [--brokers 3..5] [--txn] [--cycles] [--disks]
//! [--meta] [--clock] [--reassign] [--voters] [--zombie] [--system kafka]`: faults injected into a cluster of real `kraftd` processes
//! while stock clients write and read, then a checker over everything the clients saw (issue 32;
//! `docs/chaos.md` says how to run it and what is not there yet). `--system kafka` runs
//! Apache Kafka 4.4.0's nodes from `target/kafka-jars` instead, under the same schedule,
//! workload and checks, so that an anomaly can be told kraftd's or not; `--txn` adds the
//! transactional workload; `--cycles` several concurrent transactional writers whose
//! transactions read before they write, judged as Elle judges a list-append history;
//! `--disks` the faultable disks and their faults; `--meta` the
//! metadata workload (topics created and deleted, a config changed, ACLs created and
//! deleted, a client quota and a cluster-wide broker config changed) and its checks;
//! `--clock` the clock jump of one node; `--reassign` partition reassignments of the
//! workload's topics during the faults and their checks (with 4 brokers by default);
//! `--voters` a dynamic quorum (a spare controller beside the 3 voters) whose voter set is
//! changed during the faults, and its checks; `--zombie` zombies of the clients (the
//! exactly-once pipeline superseded while paused, group members killed and paused).
//!
//! The run: 3 controllers and 3-5 brokers, each in a network namespace of its own
//! (`net.rs`, which says why namespaces); a topic `chaos` of 3 partitions, RF 3,
//! `min.insync.replicas=2`; the workload (`workload.rs`: two acks=all producers, idempotent
//! and not, and a live consumer) for the whole run; faults one at a time for N minutes,
//! chosen by the seed (`faults.rs`), each logged with its UTC time; then every fault undone
//! and the cluster given `--heal-secs` to be whole again (every broker registered and
//! unfenced in every broker's metadata, every partition led with its full ISR, the quorum
//! with a leader and every voter caught up, and both producers acknowledging again); then
//! the producers stop, every partition is read to its end and the checker (`checker.rs`)
//! judges the history. A node that exits by itself is an anomaly too (its log's tail is
//! printed), as is a cluster that does not heal in time. It prints a summary (faults by kind,
//! records acknowledged, anomalies) and for each anomaly the seed and the slice of the
//! history around it, and fails if there is any. Everything is under the run's directory
//! (`target/chaos/seed-S-<pid>/` unless `--dir`): the node logs, the clients' JSON lines,
//! `history.log`. It needs root (the namespaces).
//!
//! Map: `nodes.rs` the kraftd (or Kafka) processes and the probes; `net.rs` the namespaces
//! and the partitions; `faults.rs` the fault kinds and the seeded schedule; `workload.rs` and
//! `workload.py` the stock clients; `checker.rs` the anomalies; `segments.rs` the batches the
//! brokers stored (the producer epoch of each copy of a duplicate); `txn_checker.rs` the
//! transactional workload's; `cycles_checker.rs` the concurrent writers' (`--cycles`);
//! `pipe_checker.rs` the exactly-once pipeline's (`--txn`);
//! `disks.rs` and `fusefs.rs` the brokers' faultable disks (`--disks`); `meta_checker.rs`
//! the metadata workload's (`--meta`); `clock.rs` and `clockjump.c` the clock jump's
//! LD_PRELOAD interposer (`--clock`); `reassign_checker.rs` the reassignment workload's
//! (`--reassign`); `voters.rs` the voter changes and `voters_checker.rs` their checks
//! (`--voters`); `zombies.rs` the zombie steps (`--zombie`); `report.rs` the summary.

mod checker;
mod clock;
mod cycles_checker;
mod disks;
mod faults;
mod fusefs;
mod group_checker;
mod meta_checker;
mod net;
mod nodes;
mod pipe_checker;
mod reassign_checker;
mod report;
mod segments;
mod txn_checker;
mod voters;
mod voters_checker;
mod workload;
mod zombies;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use checker::Anomaly;
use clock::Clocks;
use disks::Disks;
use faults::{Bounds, Kind, Rng};
use net::Lab;
use nodes::{Nodes, System};
use report::Report;
use voters::VoterWorkload;
use workload::{CyclesWorkload, Extras, ReassignWorkload, TxnWorkload, Workload};
use zombies::Zombies;

/// The topic the workload writes.
const TOPIC: &str = "chaos";
const PARTITIONS: i32 = 3;
/// The transactional workload's topic (`--txn`), as many partitions, and its producer's
/// transactional id.
const TXN_TOPIC: &str = "chaos-txn";
/// The exactly-once pipeline's output topic (`--txn`), as many partitions: the pipeline
/// writes what it read from a partition of [`TOPIC`] to the same partition of it.
const PIPE_TOPIC: &str = "chaos-pipe";
const TRANSACTIONAL_ID: &str = "chaos-txn";
/// The concurrent transactional writers' topic (`--cycles`) and its partitions: the keys of
/// their list-append history: few (as many as the writers, each transaction appending to
/// 2-3 of them), so that concurrent transactions meet on them.
const CYCLES_TOPIC: &str = "chaos-cycles";
const CYCLES_PARTITIONS: i32 = 4;
/// Brokers drop a follower from the ISR after 10 s behind instead of Kafka's 30 s, so that
/// faults of a few seconds move ISRs (and elections with them) in a short run.
const BROKER_CONFIG: &str = "replica.lag.time.max.ms=10000\n";
/// A fault is held 2-12 s, then 1-4 s of quiet.
const BOUNDS: Bounds = Bounds {
    hold_ms: (2_000, 12_000),
    gap_ms: (1_000, 4_000),
};

#[derive(clap::Args, Debug)]
pub struct ChaosArgs {
    /// Minutes of faults (a fraction is fine: 0.75).
    #[arg(long, default_value_t = 5.0)]
    minutes: f64,
    /// The seed of the fault schedule.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Broker-only nodes beside the 3 controllers: 3 unless given, 4 with `--reassign`.
    #[arg(long, value_parser = clap::value_parser!(u32).range(3..=5))]
    brokers: Option<u32>,
    /// Seconds the cluster has to be whole again once the faults stop.
    #[arg(long, default_value_t = 90)]
    heal_secs: u64,
    /// Run this kraftd binary instead of building `target/debug/kraftd`.
    #[arg(long)]
    kraftd_bin: Option<PathBuf>,
    /// What the nodes run: kraftd, or Apache Kafka 4.4.0 from `target/kafka-jars` (the same
    /// topology, workload, schedule and checks, to tell kraftd's anomalies from Kafka's).
    #[arg(long, value_enum, default_value = "kraftd")]
    system: SystemArg,
    /// The run's directory (node logs, client files, history).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Add the transactional workload (a transactional producer writing to several
    /// partitions a transaction, committing or aborting by the seed, and read_committed
    /// consumers; an exactly-once consume-transform-produce pipeline from the workload's
    /// topic to `chaos-pipe`) and the fault that kills its transaction coordinator's broker. The seed
    /// then draws from 10 kinds of fault, not 9: its schedule is not the one without.
    #[arg(long)]
    txn: bool,
    /// Add the concurrent transactional writers (`workload.py cycles`, 4 of them on a topic
    /// of their own, `chaos-cycles`): each transaction reads some partitions
    /// `read_committed` and then appends to others; afterwards Elle's dependency graph of the
    /// committed transactions, its cycles by class, and the cycles and reads Kafka's
    /// transactions forbid (`cycles_checker.rs`). No fault kind is added: the fault schedule
    /// is the seed's without it.
    #[arg(long)]
    cycles: bool,
    /// Overlap faults: with each fault of the schedule, one in two times a second one of the
    /// other family (a process fault beside a network fault) for the same hold. Draws more
    /// from the seed: a seed's schedule with `--overlap` is not its schedule without.
    #[arg(long)]
    overlap: bool,
    /// Give every broker a second log dir on a small tmpfs the harness mounts, seen through
    /// a FUSE passthrough the harness serves (`disks.rs`, `fusefs.rs`), and draw the disk
    /// faults too (a full disk, a disk failing with EIO). A seed's schedule with `--disks`
    /// is not its schedule without.
    #[arg(long)]
    disks: bool,
    /// Add the metadata workload: topics created and deleted, a config of the workload's
    /// topic changed, ACLs created and deleted, a client quota and the brokers' cluster-wide
    /// default of a config changed during the faults (every node then runs Kafka's
    /// StandardAuthorizer, every client a super user); afterwards every acknowledged change
    /// must show on every broker (`meta_checker.rs`).
    #[arg(long)]
    meta: bool,
    /// Draw the clock jump too: one node's wall clock moved hours ahead or back for the hold
    /// by an LD_PRELOAD interposer the harness builds with `cc` (`clock.rs`), with the
    /// workload topic's `retention.ms` above every jump and retention applied every second;
    /// `kraftd doctor` must report the skew, no broker may delete a segment. A seed's
    /// schedule with `--clock` is not its schedule without.
    #[arg(long)]
    clock: bool,
    /// Add the partition reassignment workload: replicas of the workload's topic's
    /// partitions (and, with `--txn`, the transactional topic's) moved from one broker to
    /// another with AlterPartitionReassignments during the faults, some moves cancelled in
    /// flight; afterwards no move may be pending and every partition must be on the replicas
    /// its acknowledged moves and cancels leave it (`reassign_checker.rs`). A move with the
    /// replication factor kept needs a broker outside the 3 replicas: 4 brokers at least.
    /// The fault schedule is the seed's without it.
    #[arg(long)]
    reassign: bool,
    /// Add the voter-change workload: the quorum a dynamic one (KIP-853: formatted with
    /// `--initial-controllers`, every node on `controller.quorum.bootstrap.servers`) with a
    /// spare controller (id 4, `--no-initial-controllers`; the brokers' ids follow), and its
    /// voter set changed during the faults with Kafka's `kafka-metadata-quorum add-controller`
    /// and `remove-controller` (3 voters most of the time: the spare added, then a voter
    /// removed, which becomes the spare); afterwards every controller must agree on one
    /// leader and on the voters the acknowledged changes leave, all caught up
    /// (`voters_checker.rs`). The schedule draws one more kind, last: a voter's metadata disk
    /// lost (formatted again: a new directory id), which the workload then replaces as an
    /// operator does (the old replica key removed, the new one added).
    #[arg(long)]
    voters: bool,
    /// Add the zombie steps (`zombies.rs`): with `--txn`, the exactly-once pipeline paused
    /// from time to time while a second process takes its transactional id and group over,
    /// then resumed (it must be fenced, and nothing it does afterwards may take effect);
    /// and group members killed and replaced, or paused past their session timeout and
    /// resumed (a late commit that must be refused). Workload, not faults: the fault
    /// schedule is the seed's without it.
    #[arg(long)]
    zombie: bool,
    /// Run no cluster: check again the clients' files a run kept in this directory.
    #[arg(long)]
    recheck: Option<PathBuf>,
}

impl ChaosArgs {
    /// The brokers of the run: `--brokers`, else 3, or 4 with `--reassign` (a move that keeps
    /// 3 replicas needs a fourth broker to move one to).
    fn brokers(&self) -> u32 {
        self.brokers.unwrap_or(if self.reassign { 4 } else { 3 })
    }

    /// The spare controllers beside the 3 initial voters: one with `--voters`.
    fn spares(&self) -> u32 {
        u32::from(self.voters)
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum SystemArg {
    Kraftd,
    Kafka,
}

/// The run's event log: printed as it happens, kept for the history slices, and written to
/// `history.log`.
struct History {
    started: Instant,
    events: Vec<(u64, String)>,
    file: std::fs::File,
}

impl History {
    fn note(&mut self, text: impl Into<String>) {
        let text = text.into();
        let ms = unix_ms();
        let line = format!(
            "{} +{:6.1}s {text}",
            utc(ms),
            self.started.elapsed().as_secs_f64()
        );
        println!("{line}");
        let _ = writeln!(self.file, "{line}");
        self.events.push((ms, text));
    }

    /// The events from 20 s before `at_ms` to 5 s after it.
    fn slice(&self, at_ms: u64) -> String {
        let mut out = String::new();
        for (ms, text) in &self.events {
            if *ms + 20_000 >= at_ms && *ms <= at_ms + 5_000 {
                let _ = writeln!(out, "    {} {text}", utc(*ms));
            }
        }
        out
    }
}

pub fn run(root: &Path, args: ChaosArgs) -> Result<()> {
    if let Some(dir) = &args.recheck {
        let mut verdict = checker::check(&workload::read_history(dir)?);
        if let Some(h) = workload::read_txn_history(dir)? {
            let (anomalies, counts) = txn_checker::check(&h);
            println!("transactions: {counts:?}");
            verdict.anomalies.extend(anomalies);
        }
        if let Some(ch) = cycles_checker::read(dir)? {
            let (anomalies, counts) = cycles_checker::check(&ch);
            println!("cycles: {counts:?}");
            verdict.anomalies.extend(anomalies);
        }
        if let Some(ph) = workload::read_pipe_history(dir)? {
            let (anomalies, counts) =
                pipe_checker::check(&ph, &workload::read_history(dir)?.final_log);
            println!("pipeline: {counts:?}");
            verdict.anomalies.extend(anomalies);
        }
        if let Some(h) = workload::read_group_history(dir)? {
            let (anomalies, counts) = group_checker::check(&h);
            println!("groups: {counts:?}");
            verdict.anomalies.extend(anomalies);
        }
        for a in &verdict.anomalies {
            println!("ANOMALY [{}] {}", a.kind, a.detail);
        }
        println!(
            "{} anomalies; at-least-once resends {:?}; classified {:?}",
            verdict.anomalies.len(),
            verdict.tolerated,
            verdict.classified
        );
        if !verdict.anomalies.is_empty() {
            bail!("{} anomalies in {}", verdict.anomalies.len(), dir.display());
        }
        return Ok(());
    }
    if args.reassign && args.brokers() < 4 {
        bail!(
            "--reassign --brokers {}: a reassignment that keeps the replication factor (3) \
             moves a replica to a broker outside the partition's replicas, so it needs 4 \
             brokers at least",
            args.brokers()
        );
    }
    if !is_root() {
        bail!(
            "cargo xtask chaos needs root: it puts every node in a network namespace of its \
             own and partitions them with policy-routing rules (ip netns, ip rule)"
        );
    }
    let system = match (args.system, &args.kraftd_bin) {
        (SystemArg::Kafka, _) => System::Kafka(crate::bench::kafka::kafka_classpath(root)?),
        (SystemArg::Kraftd, Some(bin)) => System::Kraftd(bin.clone()),
        (SystemArg::Kraftd, None) => {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            crate::run(root, &cargo, &["build", "--bin", "kraftd"])?;
            System::Kraftd(root.join("target").join("debug").join("kraftd"))
        }
    };
    let dir = args.dir.clone().unwrap_or_else(|| {
        root.join("target")
            .join("chaos")
            .join(format!("seed-{}-{}", args.seed, std::process::id()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let dir = dir.canonicalize()?;
    println!("chaos: seed {}, run directory {}", args.seed, dir.display());
    let mut history = History {
        started: Instant::now(),
        events: Vec::new(),
        file: std::fs::File::create(dir.join("history.log"))?,
    };
    let controllers = nodes::CONTROLLERS + args.spares();
    let ids: Vec<u32> = (1..=controllers + args.brokers()).collect();
    let mut lab = Lab::create(&ids)?;
    // Declared before the nodes, so dropped (unmounted) after they are stopped, also when
    // starting them fails.
    let disks = if args.disks {
        Some(Disks::mount(&dir, &ids[controllers as usize..])?)
    } else {
        None
    };
    let clocks = if args.clock {
        Some(Clocks::prepare(&dir, &ids)?)
    } else {
        None
    };
    let broker_config = if args.clock {
        format!("{BROKER_CONFIG}{}", clock::BROKER_CONFIG)
    } else {
        BROKER_CONFIG.to_string()
    };
    let mut nodes = Nodes::start(
        &system,
        &dir,
        &lab,
        args.brokers(),
        args.spares(),
        // The ACL operations of `--meta` need an authorizer on every node (Kafka's
        // ControllerApis answers CreateAcls with SECURITY_DISABLED without one).
        if args.meta {
            meta_checker::AUTHORIZER_CONFIG
        } else {
            ""
        },
        &broker_config,
        disks.as_ref(),
        clocks,
    )?;
    history.note(format!(
        "started {} controllers {:?}{} and brokers {:?} on 10.x.<id>.2",
        system.name(),
        nodes.controller_ids(),
        if args.voters {
            " (a dynamic quorum: 1-3 the initial voters, the rest observers until added)"
        } else {
            ""
        },
        nodes.broker_ids()
    ));
    let outcome = run_faults(
        root,
        &args,
        &dir,
        &mut history,
        &mut nodes,
        &mut lab,
        disks.as_ref(),
    );
    nodes.stop();
    drop(disks);
    drop(lab);
    let report = outcome.with_context(|| {
        format!(
            "the chaos run with seed {} stopped; its files are in {}",
            args.seed,
            dir.display()
        )
    })?;
    report.print(&args, &history, &dir)
}

fn run_faults(
    root: &Path,
    args: &ChaosArgs,
    dir: &Path,
    history: &mut History,
    nodes: &mut Nodes,
    lab: &mut Lab,
    disks: Option<&Disks>,
) -> Result<Report> {
    let brokers = nodes.broker_ids();
    let quorum = nodes.quorum();
    let mut anomalies = Vec::new();
    // The cluster comes up, the topic is made and led with its full ISRs (Kafka's JVMs
    // take longer than kraftd on a loaded machine).
    wait_healthy(nodes, lab, Duration::from_secs(180)).context(
        "the cluster did not come up (the node logs say why; if the nodes cannot reach each \
         other, something in the root namespace does not forward between their veths, as an \
         iptables FORWARD policy of DROP)",
    )?;
    let mut configs = vec![("min.insync.replicas", "2")];
    if args.clock {
        configs.push(("retention.ms", clock::RETENTION_MS));
    }
    nodes::create_topic(
        lab,
        brokers[0],
        TOPIC,
        PARTITIONS,
        &configs,
        Duration::from_secs(60),
    )?;
    wait_healthy(nodes, lab, Duration::from_secs(60))
        .context("the topic's partitions were not all led")?;
    history.note(format!(
        "topic {TOPIC}: {PARTITIONS} partitions, RF 3, {}",
        configs
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    // The workloads' own topics: the transactional writer's and the pipeline's (`--txn`),
    // the concurrent writers' (`--cycles`).
    let mut own_topics = Vec::new();
    if args.txn {
        own_topics.extend([(TXN_TOPIC, PARTITIONS), (PIPE_TOPIC, PARTITIONS)]);
    }
    if args.cycles {
        own_topics.push((CYCLES_TOPIC, CYCLES_PARTITIONS));
    }
    for (topic, partitions) in own_topics {
        nodes::create_topic(
            lab,
            brokers[0],
            topic,
            partitions,
            &[("min.insync.replicas", "2")],
            Duration::from_secs(60),
        )?;
        wait_healthy(nodes, lab, Duration::from_secs(60))
            .with_context(|| format!("topic {topic}'s partitions were not all led"))?;
        history.note(format!(
            "topic {topic}: {partitions} partitions, RF 3, min.insync.replicas=2"
        ));
    }
    let mut workload = Workload::new(
        root,
        dir,
        nodes::bootstrap(lab, &brokers),
        TOPIC,
        PARTITIONS,
        Extras {
            txn: args.txn.then(|| TxnWorkload {
                topic: TXN_TOPIC.to_string(),
                seed: args.seed,
                pipe_topic: PIPE_TOPIC.to_string(),
            }),
            meta: args.meta,
            reassign: args.reassign.then(|| ReassignWorkload {
                broker_ids: brokers.clone(),
                also: if args.txn {
                    vec![TXN_TOPIC.to_string()]
                } else {
                    Vec::new()
                },
                seed: args.seed,
            }),
            cycles: args.cycles.then(|| CyclesWorkload {
                topic: CYCLES_TOPIC.to_string(),
                partitions: CYCLES_PARTITIONS,
                seed: args.seed,
            }),
        },
    )?;
    workload.start()?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while workload.acks_so_far().contains(&0) {
        if let Some(which) = workload.exited() {
            bail!(
                "workload {which} exited; see its .stderr in {}",
                dir.display()
            );
        }
        if Instant::now() > deadline {
            bail!(
                "the producers acknowledged {:?} within 60 s of starting",
                workload.acks_so_far()
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    history.note(format!(
        "workload running: producers idem (idempotent) and plain, a live consumer, groups \
         chaos-classic and chaos-consumer of 2 members each{}{}{}{}",
        if args.txn {
            "; a transactional producer and a read_committed consumer; an exactly-once \
             pipeline from chaos to chaos-pipe"
        } else {
            ""
        },
        if args.cycles {
            "; 4 concurrent transactional writers reading before they write (chaos-cycles)"
        } else {
            ""
        },
        if args.meta {
            "; metadata operations"
        } else {
            ""
        },
        if args.reassign {
            "; partition reassignments between the brokers"
        } else {
            ""
        }
    ));
    let mut voters = if args.voters {
        let started = VoterWorkload::start_on(root, lab, nodes, dir, args.seed)?;
        history.note(
            "voter changes running: kafka-metadata-quorum add-controller / remove-controller \
             through --bootstrap-controller",
        );
        Some(started)
    } else {
        None
    };

    let mut zombies = args.zombie.then(|| Zombies::new(args.seed, args.txn));
    if args.zombie {
        history.note(format!(
            "zombie steps running: group members killed and replaced, or paused past their \
             session timeout{}",
            if args.txn {
                "; the exactly-once pipeline paused while a second process takes it over"
            } else {
                ""
            }
        ));
    }

    let mut rng = Rng::new(args.seed);
    let kinds = faults::kinds(args.txn, args.disks, args.clock, args.voters);
    let mut faults: BTreeMap<Kind, u32> = BTreeMap::new();
    let until = Instant::now() + Duration::from_secs_f64(args.minutes * 60.0);
    let mut n = 0;
    let mut overlapped = 0;
    while Instant::now() < until {
        let planned = faults::plan(&mut rng, &BOUNDS, &kinds);
        let second = if args.overlap {
            faults::plan_overlap(&mut rng, &planned, &kinds)
        } else {
            None
        };
        n += 1;
        let mut undos = Vec::new();
        for (i, planned) in std::iter::once(planned).chain(second).enumerate() {
            let (kind, what, undo) =
                faults::inject(&planned, nodes, lab, disks, TOPIC, TRANSACTIONAL_ID)?;
            *faults.entry(kind).or_default() += 1;
            history.note(format!(
                "fault {n}{} [{}]: {what}; held {:.1} s",
                if i == 0 { "" } else { " (overlapping)" },
                kind.name(),
                planned.hold.as_secs_f64()
            ));
            overlapped += i as u32;
            undos.push(undo);
        }
        watch(
            planned.hold,
            nodes,
            lab,
            &mut workload,
            Steps {
                voters: voters.as_mut(),
                zombies: zombies.as_mut(),
            },
            history,
            &mut anomalies,
        )?;
        // The overlapping fault first: undone in the reverse order of injection.
        for undo in undos.iter().rev() {
            let (done, found) = faults::undo(undo, nodes, lab, disks, TOPIC)?;
            history.note(format!("fault {n} undone: {done}"));
            anomalies.extend(found);
        }
        watch(
            planned.gap,
            nodes,
            lab,
            &mut workload,
            Steps {
                voters: voters.as_mut(),
                zombies: zombies.as_mut(),
            },
            history,
            &mut anomalies,
        )?;
    }
    // The reassignments stop with the faults: a move left pending must complete as the
    // cluster heals (a target broker back), which the heal check's full ISRs wait for.
    workload.stop_reassignments()?;
    for line in workload.reassign_news() {
        history.note(line);
    }
    // So do the zombie steps: what is paused resumed, a killed member replaced.
    if let Some(z) = zombies.as_mut() {
        z.finish(&mut workload, history)?;
    }
    // So do the voter changes, once the one in flight has its answer.
    if let Some(v) = voters.as_mut() {
        v.stop()?;
        for line in v.news() {
            history.note(line);
        }
    }
    history.note(format!(
        "faults over; the cluster has {} s to heal",
        args.heal_secs
    ));

    // Healing: whole again, and both producers acknowledging again.
    let healing = Instant::now();
    let acks_then = workload.acks_so_far();
    let heal_deadline = healing + Duration::from_secs(args.heal_secs);
    let mut heal_secs = None;
    let mut last = String::new();
    while Instant::now() < heal_deadline {
        crash_check(nodes, lab, history, &mut anomalies)?;
        let progress = workload
            .acks_so_far()
            .iter()
            .zip(&acks_then)
            .all(|(now, then)| now > then);
        match nodes::health(lab, &brokers, &quorum, TOPIC, PARTITIONS, nodes.disks) {
            Ok(()) if progress => {
                heal_secs = Some(healing.elapsed().as_secs_f64());
                break;
            }
            Ok(()) => last = "the producers have not acknowledged anything since".into(),
            Err(e) => last = e,
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    match heal_secs {
        Some(secs) => history.note(format!("healed in {secs:.1} s")),
        None => {
            history.note(format!("not healed after {} s: {last}", args.heal_secs));
            anomalies.push(Anomaly {
                kind: "not healed",
                detail: format!("{} s after the last fault: {last}", args.heal_secs),
                at_ms: Some(unix_ms()),
            });
        }
    }
    // The groups Stable, their members all in, every partition assigned: within what is left
    // of the heal bound (at least 15 s, for a run that did not heal).
    let left = heal_deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_secs(15));
    let (stable, last) = workload.groups_stable(left)?;
    let groups_stable_secs = stable.then(|| healing.elapsed().as_secs_f64());
    match groups_stable_secs {
        Some(secs) => history.note(format!(
            "groups Stable, every partition assigned, {secs:.1} s after the faults: {last}"
        )),
        None => {
            history.note(format!("groups not Stable: {last}"));
            anomalies.push(Anomaly {
                kind: "group not stable",
                detail: format!(
                    "not every group Stable with its members and every partition assigned \
                     within {} s of the last fault: {last}",
                    args.heal_secs.max(left.as_secs())
                ),
                at_ms: Some(unix_ms()),
            });
        }
    }
    workload.stop()?;
    history.note("workload stopped; reading every partition to its end");
    workload.read_all()?;
    let h = workload.history()?;
    history.note(format!(
        "read {} records; {} acknowledged",
        h.final_log.len(),
        h.acks.len()
    ));
    for (producer, _) in workload::PRODUCERS {
        if !h.produced.contains_key(producer) {
            bail!("producer {producer} did not report its end; see {producer}.stderr");
        }
    }
    let verdict = checker::check(&h);
    anomalies.extend(verdict.anomalies);
    let txn = match workload::read_txn_history(dir)? {
        Some(th) => {
            if !th.done {
                bail!("the transactional producer did not report its end; see txn.stderr");
            }
            let (found, counts) = txn_checker::check(&th);
            anomalies.extend(found);
            Some(counts)
        }
        None => None,
    };
    let cycles = match cycles_checker::read(dir)? {
        Some(ch) => {
            let (found, counts) = cycles_checker::check(&ch);
            history.note(format!(
                "cycles workload: {} transactions committed; cycles {:?}; {} anomalies",
                counts.committed,
                counts.cycles,
                found.len()
            ));
            anomalies.extend(found);
            Some(counts)
        }
        None => None,
    };
    let pipe = match workload::read_pipe_history(dir)? {
        Some(ph) => {
            if !ph.done {
                bail!("the pipeline did not report its end; see pipe.stderr");
            }
            let (found, counts) = pipe_checker::check(&ph, &h.final_log);
            anomalies.extend(found);
            Some(counts)
        }
        None => None,
    };
    let meta = match meta_checker::read(dir)? {
        Some(ops) => {
            let (found, counts) = until_agreed("metadata lost", || {
                meta_checker::observe(lab, &brokers, TOPIC)
                    .map(|seen| meta_checker::check(&ops, &seen))
            });
            history.note(format!(
                "metadata operations: acknowledged {:?}, unknown {:?}; {} anomalies",
                counts.acked,
                counts.unknown,
                found.len()
            ));
            anomalies.extend(found);
            Some(counts)
        }
        None => None,
    };
    let reassign = match reassign_checker::read(dir)? {
        Some(rh) => {
            if !rh.done {
                bail!("the reassignment workload did not report its end; see reassign.stderr");
            }
            let mut topics = vec![TOPIC];
            if args.txn {
                topics.push(TXN_TOPIC);
            }
            let (found, counts) = until_agreed("reassignment stuck", || {
                reassign_checker::observe(lab, &brokers, &topics)
                    .map(|seen| reassign_checker::check(&rh, &seen))
            });
            history.note(format!(
                "reassignments: {counts:?}; {} anomalies",
                found.len()
            ));
            anomalies.extend(found);
            Some(counts)
        }
        None => None,
    };
    let voters = match voters_checker::read(dir)? {
        Some(vh) => {
            if !vh.done {
                bail!("the voter workload did not report its end; see voters.jsonl");
            }
            let mut dir_ids = BTreeMap::new();
            for &id in &quorum.controllers {
                dir_ids.insert(id, nodes.metadata_dir_id(id)?);
            }
            let metrics = nodes.kraftd_bin().is_some();
            let (found, counts) = until_agreed("voters not agreed", || {
                voters_checker::observe(lab, &quorum.controllers, &dir_ids, metrics)
                    .map(|seen| voters_checker::check(&vh, &seen))
            });
            history.note(format!(
                "voter changes: {counts:?}; {} anomalies",
                found.len()
            ));
            anomalies.extend(found);
            Some(counts)
        }
        None => None,
    };
    let groups = match workload::read_group_history(dir)? {
        Some(gh) => {
            let (found, counts) = group_checker::check(&gh);
            anomalies.extend(found);
            Some(counts)
        }
        None => None,
    };
    Ok(Report {
        faults,
        overlapped,
        acked: h.acks.len(),
        acked_without_offset: h.acks.iter().filter(|a| a.offset.is_none()).count(),
        failed: h.failed,
        tolerated: verdict.tolerated,
        classified: verdict.classified,
        txn,
        groups,
        meta,
        pipe,
        cycles,
        zombies: zombies.map(|z| z.counts),
        reassign,
        voters,
        groups_stable_secs,
        live_reads: h.live.len(),
        final_records: h.final_log.len(),
        heal_secs,
        anomalies,
    })
}

/// A check of the history against what the brokers show after the faults (`judge`: asks
/// them and judges), asked again until it finds nothing, for up to 30 s: a restarted
/// broker's metadata catching up is not an anomaly. Brokers that cannot be asked at the end
/// are an anomaly of `kind`.
fn until_agreed<C: Default>(
    kind: &'static str,
    mut judge: impl FnMut() -> Result<(Vec<Anomaly>, C)>,
) -> (Vec<Anomaly>, C) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (found, counts) = judge().unwrap_or_else(|e| {
            let asked = Anomaly {
                kind,
                detail: format!("the brokers could not be asked: {e:#}"),
                at_ms: Some(unix_ms()),
            };
            (vec![asked], C::default())
        });
        if found.is_empty() || Instant::now() > deadline {
            return (found, counts);
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The workload steps [`watch`] runs besides watching: the voter changes' news and the zombie
/// steps.
struct Steps<'a> {
    voters: Option<&'a mut VoterWorkload>,
    zombies: Option<&'a mut Zombies>,
}

/// Waits `span`, watching for nodes and clients that exit by themselves, and running the
/// workload's steps.
fn watch(
    span: Duration,
    nodes: &mut Nodes,
    lab: &Lab,
    workload: &mut Workload,
    mut steps: Steps,
    history: &mut History,
    anomalies: &mut Vec<Anomaly>,
) -> Result<()> {
    let until = Instant::now() + span;
    while Instant::now() < until {
        crash_check(nodes, lab, history, anomalies)?;
        for line in workload.reassign_news() {
            history.note(line);
        }
        if let Some(which) = workload.exited() {
            bail!("workload {which} exited during the faults; see its .stderr");
        }
        if let Some(z) = steps.zombies.as_deref_mut() {
            z.tick(workload, history)?;
        }
        if let Some(v) = steps.voters.as_deref_mut() {
            for line in v.news() {
                history.note(line);
            }
            if let Some(why) = v.failed() {
                bail!("the voter workload stopped during the faults: {why}");
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

/// A node that exited without being killed is an anomaly; it is started again so the run
/// goes on.
fn crash_check(
    nodes: &mut Nodes,
    lab: &Lab,
    history: &mut History,
    anomalies: &mut Vec<Anomaly>,
) -> Result<()> {
    if let Some((id, status)) = nodes.exited() {
        history.note(format!(
            "node {id} exited by itself ({status}); restarting it"
        ));
        anomalies.push(Anomaly {
            kind: "node exited",
            detail: format!(
                "node {id} exited ({status}); its log ends:\n{}",
                nodes.log_tail(id, 30)
            ),
            at_ms: Some(unix_ms()),
        });
        nodes.spawn(lab, id)?;
    }
    Ok(())
}

/// Waits until [`nodes::health`] holds.
fn wait_healthy(nodes: &mut Nodes, lab: &Lab, limit: Duration) -> Result<()> {
    let brokers = nodes.broker_ids();
    let deadline = Instant::now() + limit;
    loop {
        if let Some((id, status)) = nodes.exited() {
            bail!(
                "node {id} exited ({status}); its log ends:\n{}",
                nodes.log_tail(id, 30)
            );
        }
        match nodes::health(
            lab,
            &brokers,
            &nodes.quorum(),
            TOPIC,
            PARTITIONS,
            nodes.disks,
        ) {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() > deadline => bail!("after {limit:?}: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(250)),
        }
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|uids| uids.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `HH:MM:SS.mmm` UTC of a Unix ms (the node logs' clock).
fn utc(ms: u64) -> String {
    let s = ms / 1000;
    format!(
        "{:02}:{:02}:{:02}.{:03}Z",
        (s / 3600) % 24,
        (s / 60) % 60,
        s % 60,
        ms % 1000
    )
}
