//! `cargo xtask bench clients`: what many clients cost one node, kraftd beside Apache Kafka
//! 4.4.0 in one run (issue 33, "Many clients"). A benchmark: it prints figures, asserts
//! nothing.
//!
//! Each system runs one combined node (broker and controller in one process, as `bench
//! scale` lays it out, Kafka's JVM with `--kafka-heap`), with the same settings: their
//! defaults, which put no limit on connections (`max.connections`,
//! `max.connections.per.ip` and `max.connection.creation.rate` default to 2^31-1 in both)
//! and close idle ones after 10 minutes (`connections.max.idle.ms`), longer than a run. The
//! rows run one after the other, each at two sizes (a quarter of N, then the rest up to N,
//! so that the per-unit cost of the first quarter and of the rest show whether a row grows
//! faster than linearly); before each row the node's CPU settles and its RSS is the
//! baseline:
//! 1. idle connections: `--connections` TCP connections, each sending ApiVersions and one
//!    Metadata, then left open; the time to open them, the node's RSS growth and file
//!    descriptors per connection, and its CPU over `--idle-secs` with none, a quarter and
//!    all of them open;
//! 2. idempotent producers: `--producers` InitProducerId (no transactional id), then one
//!    Produce each (acks=1, one record, sequence 0) to a topic of `--partitions`
//!    partitions; the time of the inits and of the produces, and the RSS growth per producer
//!    (the producer state the node keeps);
//! 3. groups committing offsets: `--groups` groups, each a FindCoordinator and a simple
//!    OffsetCommit (generation -1, no member, as `kafka-consumer-groups --reset-offsets`
//!    commits) of every partition of that topic; commits/s and RSS growth per group, then
//!    one OffsetFetch per group committed so far;
//! 4. members of one classic consumer group (`--members`; a group of a quarter, then another
//!    of all of them): each member a thread with its own connection that joins (JoinGroup
//!    twice, as MEMBER_ID_REQUIRED asks), syncs (the leader assigns the topic's partitions
//!    by range), heartbeats every 3 s and leaves with LeaveGroup; the time from the first
//!    JoinGroup until every member is synced on one generation (which includes
//!    `group.initial.rebalance.delay.ms`, 3 s in both), the node's CPU over `--idle-secs`
//!    while they heartbeat, its RSS growth per member, the time until all have left.
//!
//! The requests go through `scale_client.rs`, from `--threads` client threads (one
//! connection each for rows 2 and 3). The client needs a file descriptor per connection:
//! the bench raises its soft RLIMIT_NOFILE to the hard limit (`prlimit`) before it starts
//! the nodes, which inherit it (Kafka's JVM raises its own soft limit to the hard one too,
//! `-XX:+MaxFDLimit`), and says so when the hard limit is too low for `--connections`.

use std::ops::Range;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use kraftd_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedTopic;
use kraftd_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kraftd_protocol::messages::leave_group_request::MemberIdentity;
use kraftd_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kraftd_protocol::messages::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, HeartbeatRequest, JoinGroupRequest,
    LeaveGroupRequest, SyncGroupRequest,
};
use kraftd_protocol::{Message, RequestBody, ResponseBody};

use super::machine::machine_ticks;
use super::produce::{loadavg, Against, System};
use super::scale::{cpu_over, layout, open_fds, poll_until, rss_bytes, settle, Nodes};
use super::scale_client::{check, error_name, retriable, Conn};
use super::systems::{run_systems, Frame, RunFigures, RunStatus, SystemRun};

/// The topic the producers write to and the groups commit offsets of.
const TOPIC: &str = "clients-data";
/// File descriptors the bench process needs beside its connections.
const SPARE_FDS: u64 = 512;

#[derive(clap::Args, Debug)]
pub(super) struct ClientsArgs {
    /// Idle client connections (row 1).
    #[arg(long, default_value_t = 10_000)]
    connections: usize,
    /// Idempotent producers (row 2).
    #[arg(long, default_value_t = 1_000)]
    producers: usize,
    /// Groups committing offsets (row 3).
    #[arg(long, default_value_t = 10_000)]
    groups: usize,
    /// Members of one classic consumer group (row 4; 0: no row 4).
    #[arg(long, default_value_t = 1_000)]
    members: usize,
    /// Partitions of the topic produced to and committed (every group commits all of them).
    #[arg(long, default_value_t = 4)]
    partitions: i32,
    /// Client threads opening the connections and sending the producers' and groups'
    /// requests (one connection each).
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Length of each idle CPU window (row 1).
    #[arg(long, default_value_t = 30)]
    idle_secs: u64,
    /// Kafka's JVM heap (-Xms and -Xmx).
    #[arg(long, default_value = "1g")]
    kafka_heap: String,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
}

/// One step of a row: `units` more clients (connections, producers, groups) handled in
/// `secs`, the node's RSS growth over the row's baseline once they were, and the machine
/// during the step.
#[derive(Debug, Default, Clone)]
struct Step {
    /// The first and last unit of the step (1-based, inclusive).
    first: usize,
    last: usize,
    secs: f64,
    /// RSS after the step minus the row's baseline (bytes; may be negative).
    rss_growth: i64,
    /// Kafka only: its live heap after the step minus the row's baseline (bytes).
    heap_growth: Option<i64>,
    /// The busy share of all cores during the step, and the load average after it.
    machine_busy: f64,
    load: String,
}

impl Step {
    fn units(&self) -> usize {
        self.last + 1 - self.first
    }
}

/// One system's figures, filled in as measured (a failed row leaves the rest empty).
#[derive(Default)]
struct Figures {
    /// Row 1: opening the connections, each step.
    connect: Vec<Step>,
    /// The node's CPU (cores) over `--idle-secs` with this many connections open.
    idle: Vec<(usize, f64)>,
    /// The node's open file descriptors with this many connections open.
    fds: Vec<(usize, usize)>,
    /// Row 2: InitProducerId, then the first Produce, each step.
    init: Vec<Step>,
    produce: Vec<Step>,
    /// Row 3: FindCoordinator + OffsetCommit per group, then OffsetFetch of every group so
    /// far, each step.
    commit: Vec<Step>,
    fetch: Vec<Step>,
    /// Row 4: a group of a quarter of `--members`, then one of all of them.
    members: Vec<GroupRun>,
    /// The open files limit (soft) of the node.
    node_nofile: String,
    run: RunStatus,
}

impl RunFigures for Figures {
    fn status(&mut self) -> &mut RunStatus {
        &mut self.run
    }
}

pub(super) fn clients(root: &Path, args: ClientsArgs) -> Result<()> {
    if args.connections < 4
        || args.producers < 4
        || args.groups < 4
        || (1..4).contains(&args.members)
    {
        bail!("--connections, --producers, --groups and --members (unless 0) must be at least 4 (two sizes: N/4 and N)");
    }
    if args.threads == 0 || args.partitions <= 0 {
        bail!("--threads and --partitions must be positive");
    }
    let nofile = raise_nofile(args.connections as u64 + SPARE_FDS)?;
    println!("open files limit of the bench and the nodes it starts: {nofile}");
    let frame = Frame {
        root,
        name: "clients",
        against: args.against,
        keep: args.keep,
        kafka_tools: false,
        what: "one combined node",
        kraftd_bin: None,
    };
    run_systems(
        frame,
        |run, nodes, figures| drive(run, &args, nodes, figures),
        |runs| print_report(&args, runs),
    )
}

/// Raises this process's soft RLIMIT_NOFILE to its hard limit with util-linux's `prlimit`
/// when it is below `need` (the nodes started afterwards inherit it); fails, saying how to
/// raise it, when the hard limit is below `need`. The soft and hard limits after it.
fn raise_nofile(need: u64) -> Result<String> {
    let (soft, hard) = nofile_limits(std::process::id())?;
    if soft >= need {
        return Ok(format!("{soft} (hard {hard})"));
    }
    if hard < need {
        bail!(
            "--connections needs {need} open files in the bench process but its hard \
             RLIMIT_NOFILE is {hard}: raise it (`ulimit -Hn {need}` as root, or nofile in \
             /etc/security/limits.conf) or pass fewer --connections"
        );
    }
    let status = Command::new("prlimit")
        .args([
            "--pid",
            &std::process::id().to_string(),
            &format!("--nofile={hard}:{hard}"),
        ])
        .status()
        .context("running prlimit (util-linux) to raise the open files limit")?;
    if !status.success() {
        bail!("prlimit --nofile={hard}:{hard} failed: {status}");
    }
    let (soft, hard) = nofile_limits(std::process::id())?;
    Ok(format!("{soft} (hard {hard}; raised with prlimit)"))
}

/// The soft and hard "Max open files" of `/proc/<pid>/limits`.
fn nofile_limits(pid: u32) -> Result<(u64, u64)> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits"))?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .ok_or_else(|| anyhow!("no \"Max open files\" in /proc/{pid}/limits"))?;
    let nums: Vec<u64> = line
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    match nums[..] {
        [soft, hard, ..] => Ok((soft, hard)),
        _ => bail!("unreadable /proc/{pid}/limits line: {line}"),
    }
}

/// The two steps of a row of `n` units: the first quarter, then the rest.
fn steps(n: usize) -> [Range<usize>; 2] {
    [0..n / 4, n / 4..n]
}

/// Runs `work` over `range` split into `threads` contiguous chunks, one thread each; the
/// chunks' results in order.
fn spread<T: Send>(
    threads: usize,
    range: Range<usize>,
    work: impl Fn(Range<usize>) -> Result<Vec<T>> + Sync,
) -> Result<Vec<T>> {
    let len = range.len();
    let per = len.div_ceil(threads.max(1)).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| range.start + (t * per).min(len)..range.start + ((t + 1) * per).min(len))
            .filter(|r| !r.is_empty())
            .map(|r| {
                let work = &work;
                s.spawn(move || work(r))
            })
            .collect();
        let mut all = Vec::with_capacity(len);
        for h in handles {
            all.extend(
                h.join()
                    .map_err(|_| anyhow!("a client thread panicked"))??,
            );
        }
        Ok(all)
    })
}

/// Calls `request` until it answers a value, retrying (after 20 ms) on a retriable error
/// code for up to 60 s, as Kafka's clients do.
fn retrying<T>(what: &str, mut request: impl FnMut() -> Result<Result<T, i16>>) -> Result<T> {
    let t0 = Instant::now();
    loop {
        match request()? {
            Ok(v) => return Ok(v),
            Err(code) if retriable(code) && t0.elapsed() < Duration::from_secs(60) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(code) => bail!("{what}: error {code} ({})", error_name(code)),
        }
    }
}

/// A row's baseline: the node's RSS and, for Kafka's JVM, its live heap.
#[derive(Clone, Copy)]
struct Baseline {
    rss: u64,
    heap: Option<u64>,
}

impl Baseline {
    /// Waits (up to a minute) for the node's CPU to settle, then reads it.
    fn take(system: System, pid: u32) -> Baseline {
        settle(pid, Instant::now(), Duration::from_secs(60));
        Baseline {
            rss: rss_bytes(pid),
            heap: live_heap(system, pid),
        }
    }

    /// Fills in `s`'s growth over this baseline, read now.
    fn growth(&self, system: System, pid: u32, s: &mut Step) {
        s.rss_growth = rss_bytes(pid) as i64 - self.rss as i64;
        s.heap_growth = self
            .heap
            .zip(live_heap(system, pid))
            .map(|(a, b)| b as i64 - a as i64);
    }
}

/// Kafka's live heap in bytes: the total of `jcmd <pid> GC.class_histogram`, which runs a
/// full GC first. The JVM's RSS under a fixed heap (-Xms = -Xmx) grows with the heap pages
/// it has touched, garbage included, so it says little of what a connection, a producer or
/// a group keeps alive; this says that. None for kraftd (its RSS is its memory) or when
/// jcmd fails.
fn live_heap(system: System, pid: u32) -> Option<u64> {
    if system != System::Kafka {
        return None;
    }
    let out = Command::new("jcmd")
        .args([&pid.to_string(), "GC.class_histogram"])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let total = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with("Total"))?;
    total.split_whitespace().last()?.parse().ok()
}

/// Times `work` over the units of `range` and records the step: its time, the node's RSS
/// (and Kafka's live heap) growth over `base`, the machine's busy share during it.
fn step(
    system: System,
    pid: u32,
    base: Baseline,
    range: &Range<usize>,
    work: impl FnOnce() -> Result<()>,
) -> Result<Step> {
    let (busy0, total0) = machine_ticks();
    let t0 = Instant::now();
    work()?;
    let secs = t0.elapsed().as_secs_f64();
    let (busy1, total1) = machine_ticks();
    let mut s = Step {
        first: range.start + 1,
        last: range.end,
        secs,
        machine_busy: (busy1 - busy0) as f64 / (total1 - total0).max(1) as f64,
        load: loadavg(),
        ..Default::default()
    };
    base.growth(system, pid, &mut s);
    Ok(s)
}

fn group_name(i: usize) -> String {
    format!("clients-group-{i:06}")
}

fn drive(
    run: &SystemRun<'_>,
    args: &ClientsArgs,
    nodes: &mut Nodes,
    f: &mut Figures,
) -> Result<()> {
    let SystemRun {
        system,
        bin,
        classpath,
        dir,
    } = *run;
    let limit = Duration::from_secs(120);
    *nodes = layout(system, bin, classpath, dir, &args.kafka_heap, 1)?;
    let port = nodes.0[0].port;
    nodes.0[0].start()?;
    poll_until("the combined node registered", limit, || {
        Ok(Conn::connect(port)?.metadata(TOPIC)?.0.contains(&1))
    })?;
    let pid = nodes.0[0].pid();
    let (soft, hard) = nofile_limits(pid)?;
    f.node_nofile = format!("{soft} (hard {hard})");
    println!("node 1 up (pid {pid}, open files limit {})", f.node_nofile);

    // Row 1: idle connections.
    let base = Baseline::take(system, pid);
    f.fds.push((0, open_fds(pid)));
    // Settled again after the baseline's full GC (Kafka).
    settle(pid, Instant::now(), limit);
    f.idle.push((0, cpu_over(pid, args.idle_secs)));
    let mut open: Vec<Conn> = Vec::with_capacity(args.connections);
    for range in steps(args.connections) {
        let s = step(system, pid, base, &range, || {
            open.extend(spread(args.threads, range.clone(), |r| {
                r.map(|i| {
                    let mut c = Conn::connect(port)
                        .with_context(|| format!("opening connection {}", i + 1))?;
                    c.api_versions()?;
                    c.metadata(TOPIC)?;
                    Ok(c)
                })
                .collect()
            })?);
            Ok(())
        })?;
        println!(
            "{} connections open after {:.2} s (RSS +{} MiB)",
            s.last,
            s.secs,
            s.rss_growth >> 20
        );
        f.connect.push(s);
        settle(pid, Instant::now(), limit);
        f.idle.push((open.len(), cpu_over(pid, args.idle_secs)));
        f.fds.push((open.len(), open_fds(pid)));
        // The RSS once the node has settled, which the idle window let it do.
        if let Some(last) = f.connect.last_mut() {
            base.growth(system, pid, last);
        }
    }
    drop(open);

    // Row 2: idempotent producers.
    let mut admin = Conn::connect(port)?;
    admin.create_topics_placed(&[TOPIC.to_string()], args.partitions, 1)?;
    poll_until("the data topic led", limit, || {
        Ok(admin.metadata(TOPIC)?.1.led >= args.partitions as usize)
    })?;
    let value = Bytes::from(vec![b'x'; 100]);
    // A warm-up producer (not counted): the first InitProducerId waits for the node's first
    // block of producer ids.
    let id = retrying("InitProducerId", || admin.init_producer_id())?;
    admin.produce_first(TOPIC, 0, id, &value)?;
    let base = Baseline::take(system, pid);
    for range in steps(args.producers) {
        let mut ids: Vec<(i64, i16)> = Vec::new();
        let s = step(system, pid, base, &range, || {
            ids = spread(args.threads, range.clone(), |r| {
                let mut c = Conn::connect(port)?;
                r.map(|_| retrying("InitProducerId", || c.init_producer_id()))
                    .collect()
            })?;
            Ok(())
        })?;
        f.init.push(s);
        let s = step(system, pid, base, &range, || {
            spread(args.threads, range.clone(), |r| {
                let mut c = Conn::connect(port)?;
                for i in r {
                    let partition = (i % args.partitions as usize) as i32;
                    c.produce_first(TOPIC, partition, ids[i - range.start], &value)?;
                }
                Ok(Vec::<()>::new())
            })?;
            Ok(())
        })?;
        println!(
            "{} producers initialized and produced once (RSS +{} KiB)",
            s.last,
            s.rss_growth >> 10
        );
        f.produce.push(s);
    }

    // Row 3: groups committing offsets.
    retrying("FindCoordinator", || {
        admin.find_group_coordinator("clients-warm-up")
    })?;
    retrying("OffsetCommit", || {
        admin
            .commit_offsets("clients-warm-up", TOPIC, args.partitions, 1)
            .map(|code| if code == 0 { Ok(()) } else { Err(code) })
    })?;
    let base = Baseline::take(system, pid);
    for range in steps(args.groups) {
        let s = step(system, pid, base, &range, || {
            spread(args.threads, range.clone(), |r| {
                let mut c = Conn::connect(port)?;
                for i in r {
                    let group = group_name(i);
                    retrying("FindCoordinator", || c.find_group_coordinator(&group))?;
                    retrying("OffsetCommit", || {
                        c.commit_offsets(&group, TOPIC, args.partitions, i as i64)
                            .map(|code| if code == 0 { Ok(()) } else { Err(code) })
                    })?;
                }
                Ok(Vec::<()>::new())
            })?;
            Ok(())
        })?;
        println!(
            "{} groups committed after {:.2} s (RSS +{} KiB)",
            s.last,
            s.secs,
            s.rss_growth >> 10
        );
        f.commit.push(s);
        let all = 0..range.end;
        let s = step(system, pid, base, &all, || {
            spread(args.threads, all.clone(), |r| {
                let mut c = Conn::connect(port)?;
                for i in r {
                    let group = group_name(i);
                    let got = retrying("OffsetFetch", || {
                        c.fetch_offsets(&group, TOPIC, args.partitions)
                    })?;
                    if got != args.partitions as usize {
                        bail!(
                            "OffsetFetch of {group}: {got} of {} partitions committed",
                            args.partitions
                        );
                    }
                }
                Ok(Vec::<()>::new())
            })?;
            Ok(())
        })?;
        f.fetch.push(s);
    }

    // Row 4: members of one classic group, a group of each size.
    if args.members > 0 {
        for n in [args.members / 4, args.members] {
            let group = format!("clients-members-{n}");
            f.members
                .push(group_run(system, pid, port, &group, n, args)?);
        }
    }
    Ok(())
}

/// A row of the report: its label and how to print one system's figure.
type Row<'a> = (String, Box<dyn Fn(&Figures) -> Option<f64> + 'a>);

/// The two memory rows of a step with `n` units: RSS growth per `unit`, then (Kafka's) live
/// heap growth per `unit`, in KiB, from `growth` (RSS and heap growth in bytes).
fn memory_rows<'a>(
    rows: &mut Vec<Row<'a>>,
    unit: &str,
    at: &str,
    n: usize,
    growth: impl Fn(&Figures) -> Option<(i64, Option<i64>)> + Copy + 'a,
) {
    let kib = move |b: i64| b as f64 / 1024.0 / n as f64;
    rows.push((
        format!("   RSS growth per {unit}, {at} (KiB)"),
        Box::new(move |f| growth(f).map(|(rss, _)| kib(rss))),
    ));
    rows.push((
        format!("   live heap growth per {unit}, {at} (KiB; JVM)"),
        Box::new(move |f| growth(f).and_then(|(_, heap)| heap).map(kib)),
    ));
}

fn print_report(args: &ClientsArgs, runs: &[(System, Figures)]) {
    println!();
    println!(
        "bench clients: one combined node each, the same (default) settings; {} threads of the \
         bench's raw-protocol client; each row at two sizes (the first quarter, then the rest)",
        args.threads
    );
    let mut rows: Vec<Row> = Vec::new();
    let per_step = |i: usize, v: &Vec<Step>, f: &dyn Fn(&Step) -> f64| v.get(i).map(f);
    for (i, range) in steps(args.connections).into_iter().enumerate() {
        rows.push((
            format!(
                "1. connections {}-{}: open + ApiVersions + Metadata, us each",
                range.start + 1,
                range.end
            ),
            Box::new(move |f: &Figures| {
                per_step(i, &f.connect, &|s| 1e6 * s.secs / s.units() as f64)
            }),
        ));
    }
    for i in 0..2 {
        let n = steps(args.connections)[i].end;
        memory_rows(
            &mut rows,
            "connection",
            &format!("{n} open"),
            n,
            move |f: &Figures| f.connect.get(i).map(|s| (s.rss_growth, s.heap_growth)),
        );
    }
    for i in 0..3 {
        rows.push((
            format!(
                "   idle CPU, {} open (% of a core over {} s)",
                [0, args.connections / 4, args.connections][i],
                args.idle_secs
            ),
            Box::new(move |f: &Figures| f.idle.get(i).map(|(_, c)| 100.0 * c)),
        ));
    }
    rows.push((
        format!("   open fds, {} open", args.connections),
        Box::new(|f: &Figures| f.fds.last().map(|(_, n)| *n as f64)),
    ));
    rows.push((
        "   fds per connection".to_string(),
        Box::new(|f: &Figures| match (f.fds.first(), f.fds.last()) {
            (Some((_, a)), Some((n, b))) if *n > 0 => Some((*b as f64 - *a as f64) / *n as f64),
            _ => None,
        }),
    ));
    for (i, range) in steps(args.producers).into_iter().enumerate() {
        rows.push((
            format!(
                "2. producers {}-{}: InitProducerId, us each",
                range.start + 1,
                range.end
            ),
            Box::new(move |f: &Figures| per_step(i, &f.init, &|s| 1e6 * s.secs / s.units() as f64)),
        ));
        rows.push((
            format!(
                "   producers {}-{}: first Produce, us each",
                range.start + 1,
                range.end
            ),
            Box::new(move |f: &Figures| {
                per_step(i, &f.produce, &|s| 1e6 * s.secs / s.units() as f64)
            }),
        ));
    }
    for i in 0..2 {
        let n = steps(args.producers)[i].end;
        memory_rows(
            &mut rows,
            "producer",
            &format!("{n} producers"),
            n,
            move |f: &Figures| f.produce.get(i).map(|s| (s.rss_growth, s.heap_growth)),
        );
    }
    for (i, range) in steps(args.groups).into_iter().enumerate() {
        rows.push((
            format!(
                "3. groups {}-{}: FindCoordinator + OffsetCommit /s",
                range.start + 1,
                range.end
            ),
            Box::new(move |f: &Figures| per_step(i, &f.commit, &|s| s.units() as f64 / s.secs)),
        ));
    }
    for i in 0..2 {
        let n = steps(args.groups)[i].end;
        memory_rows(
            &mut rows,
            "group",
            &format!("{n} groups"),
            n,
            move |f: &Figures| f.commit.get(i).map(|s| (s.rss_growth, s.heap_growth)),
        );
        rows.push((
            format!("   OffsetFetch of all {n} groups /s"),
            Box::new(move |f: &Figures| per_step(i, &f.fetch, &|s| s.units() as f64 / s.secs)),
        ));
    }
    if args.members > 0 {
        for i in 0..2 {
            let n = [args.members / 4, args.members][i];
            let g = move |f: &Figures| f.members.get(i).cloned();
            rows.push((
                format!("4. {n} members: first JoinGroup to all synced (s)"),
                Box::new(move |f: &Figures| g(f).map(|r| r.stable_s)),
            ));
            rows.push((
                format!("   heartbeat CPU, {n} members (% of a core)"),
                Box::new(move |f: &Figures| g(f).map(|r| 100.0 * r.heartbeat_cores)),
            ));
            memory_rows(&mut rows, "member", &format!("{n} members"), n, move |f| {
                g(f).map(|r| (r.rss_growth, r.heap_growth))
            });
            rows.push((
                format!("   LeaveGroup of all {n} members (s)"),
                Box::new(move |f: &Figures| g(f).map(|r| r.leave_s)),
            ));
        }
    }
    let width = 62;
    print!("{:<width$}", "");
    for (system, _) in runs {
        print!(" | {:>12}", system.name());
    }
    let both = runs.len() == 2;
    if both {
        print!(" | {:>12}", "kraftd/Kafka");
    }
    println!();
    println!(
        "{}",
        "-".repeat(width + 15 * (runs.len() + usize::from(both)))
    );
    for (label, value) in &rows {
        print!("{label:<width$}");
        let values: Vec<Option<f64>> = runs.iter().map(|(_, f)| value(f)).collect();
        for v in &values {
            print!(" | {:>12}", v.map_or("-".into(), |v| format!("{v:.2}")));
        }
        if both {
            let ratio = match (values[0], values[1]) {
                (Some(a), Some(b)) if b != 0.0 => format!("{:.2}x", a / b),
                _ => "-".into(),
            };
            print!(" | {ratio:>12}");
        }
        println!();
    }
    println!();
    for (system, f) in runs {
        println!(
            "{}: load average before its run {}; node's open files limit {}",
            system.name(),
            f.run.load_before,
            f.node_nofile
        );
        let all = f
            .connect
            .iter()
            .map(|s| ("connections", s))
            .chain(f.init.iter().map(|s| ("InitProducerId", s)))
            .chain(f.produce.iter().map(|s| ("Produce", s)))
            .chain(f.commit.iter().map(|s| ("OffsetCommit", s)))
            .chain(f.fetch.iter().map(|s| ("OffsetFetch", s)));
        for (what, s) in all {
            println!(
                "  {what:<15} {:>6}-{:<6} {:>8.2} s, machine {:>3.0}% busy, load average after {}",
                s.first,
                s.last,
                s.secs,
                100.0 * s.machine_busy,
                s.load
            );
        }
        for r in &f.members {
            println!(
                "  group of {:>5} members: stable in generation {} ({} rebalances after a sync), \
                 machine {:>3.0}% busy while joining, load average after {}",
                r.members,
                r.generation,
                r.rebalances,
                100.0 * r.machine_busy,
                r.load
            );
        }
        if let Some(e) = &f.run.error {
            println!(
                "{} stopped early: {}",
                system.name(),
                e.lines().next().unwrap_or("")
            );
        }
    }
    println!(
        "RSS growth: the node's VmRSS after the step (after the idle window for connections) \
         minus before the row, per unit; kraftd/Kafka below 1 is better for kraftd except in \
         the /s rows (above 1 better)"
    );
}

// ---------------------------------------------------------------------------------------------
// Row 4: members of one classic consumer group.

const JOIN_GROUP_VERSION: i16 = 7;
const SYNC_GROUP_VERSION: i16 = 5;
const HEARTBEAT_VERSION: i16 = 4;
const LEAVE_GROUP_VERSION: i16 = 4;
/// The Java consumer's defaults: session.timeout.ms, max.poll.interval.ms (the rebalance
/// timeout), heartbeat.interval.ms.
const SESSION_TIMEOUT_MS: i32 = 45_000;
const REBALANCE_TIMEOUT_MS: i32 = 300_000;
const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(3);

/// What the members of one group report to the bench's main thread.
#[derive(Default)]
struct GroupState {
    /// Each member's generation once its SyncGroup answered (None while it rejoins).
    synced: Vec<Option<i32>>,
    /// Rebalances members were told of (REBALANCE_IN_PROGRESS) after a sync.
    rebalances: usize,
    /// Members that have left (LeaveGroup answered).
    left: usize,
    error: Option<String>,
}

/// The figures of one group of `members`: the time from the first JoinGroup until every
/// member was synced on the same generation, the node's CPU over `--idle-secs` while they
/// heartbeat, its RSS growth, the time for all of them to leave.
#[derive(Debug, Default, Clone)]
struct GroupRun {
    members: usize,
    stable_s: f64,
    generation: i32,
    rebalances: usize,
    heartbeat_cores: f64,
    rss_growth: i64,
    heap_growth: Option<i64>,
    leave_s: f64,
    machine_busy: f64,
    load: String,
}

/// A version-prefixed embedded consumer-protocol message (ConsumerProtocolSubscription,
/// ConsumerProtocolAssignment), as the Java consumer writes it in a group's metadata.
fn consumer_protocol<M: Message>(message: &M, version: i16) -> Result<Bytes> {
    let mut out = version.to_be_bytes().to_vec();
    out.extend_from_slice(&message.to_bytes(version)?);
    Ok(Bytes::from(out))
}

/// One consumer of `group` on its own connection, run by its own thread: joins (twice: the
/// first JoinGroup is answered MEMBER_ID_REQUIRED with its id), syncs (the leader sends a
/// range assignment of the topic's partitions), records its generation in `state[me]`,
/// heartbeats every 3 s and rejoins on REBALANCE_IN_PROGRESS, until `stop`; then
/// LeaveGroup.
fn member(
    port: u16,
    group: &str,
    me: usize,
    partitions: i32,
    state: &Mutex<GroupState>,
    stop: &AtomicBool,
) -> Result<()> {
    let mut c = connect_retrying(port)?;
    let subscription = consumer_protocol(
        &ConsumerProtocolSubscription {
            topics: vec![TOPIC.to_string()],
            ..Default::default()
        },
        0,
    )?;
    let mut member_id = String::new();
    'join: loop {
        let body = RequestBody::JoinGroup(JoinGroupRequest {
            group_id: group.to_string(),
            session_timeout_ms: SESSION_TIMEOUT_MS,
            rebalance_timeout_ms: REBALANCE_TIMEOUT_MS,
            member_id: member_id.clone(),
            protocol_type: "consumer".into(),
            protocols: vec![JoinGroupRequestProtocol {
                name: "range".into(),
                metadata: subscription.clone(),
                ..Default::default()
            }],
            ..Default::default()
        });
        let ResponseBody::JoinGroup(join) = c.call(JOIN_GROUP_VERSION, body)? else {
            bail!("not a JoinGroup response");
        };
        member_id = join.member_id.clone();
        match join.error_code {
            0 => {}
            79 /* MEMBER_ID_REQUIRED */ => continue,
            code if retriable(code) || code == 27 => continue,
            code => bail!("JoinGroup of member {me}: error {code} ({})", error_name(code)),
        }
        let assignments = if join.leader == member_id {
            let n = join.members.len() as i32;
            join.members
                .iter()
                .enumerate()
                .map(|(k, m)| {
                    let mine: Vec<i32> = (0..partitions).filter(|p| p % n == k as i32).collect();
                    let assignment = ConsumerProtocolAssignment {
                        assigned_partitions: if mine.is_empty() {
                            Vec::new()
                        } else {
                            vec![AssignedTopic {
                                topic: TOPIC.to_string(),
                                partitions: mine,
                            }]
                        },
                        ..Default::default()
                    };
                    Ok(SyncGroupRequestAssignment {
                        member_id: m.member_id.clone(),
                        assignment: consumer_protocol(&assignment, 0)?,
                        ..Default::default()
                    })
                })
                .collect::<Result<Vec<_>>>()?
        } else {
            Vec::new()
        };
        let body = RequestBody::SyncGroup(SyncGroupRequest {
            group_id: group.to_string(),
            generation_id: join.generation_id,
            member_id: member_id.clone(),
            protocol_type: Some("consumer".into()),
            protocol_name: join.protocol_name.clone(),
            assignments,
            ..Default::default()
        });
        let ResponseBody::SyncGroup(sync) = c.call(SYNC_GROUP_VERSION, body)? else {
            bail!("not a SyncGroup response");
        };
        match sync.error_code {
            0 => {}
            code if retriable(code) || code == 27 => continue,
            code => bail!(
                "SyncGroup of member {me}: error {code} ({})",
                error_name(code)
            ),
        }
        lock(state).synced[me] = Some(join.generation_id);
        while !stop.load(Ordering::Relaxed) {
            std::thread::park_timeout(HEARTBEAT_INTERVAL);
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let body = RequestBody::Heartbeat(HeartbeatRequest {
                group_id: group.to_string(),
                generation_id: join.generation_id,
                member_id: member_id.clone(),
                ..Default::default()
            });
            let ResponseBody::Heartbeat(hb) = c.call(HEARTBEAT_VERSION, body)? else {
                bail!("not a Heartbeat response");
            };
            match hb.error_code {
                0 => {}
                27 => {
                    let mut s = lock(state);
                    s.synced[me] = None;
                    s.rebalances += 1;
                    continue 'join;
                }
                code => bail!(
                    "Heartbeat of member {me}: error {code} ({})",
                    error_name(code)
                ),
            }
        }
        break;
    }
    let body = RequestBody::LeaveGroup(LeaveGroupRequest {
        group_id: group.to_string(),
        members: vec![MemberIdentity {
            member_id,
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::LeaveGroup(leave) = c.call(LEAVE_GROUP_VERSION, body)? else {
        bail!("not a LeaveGroup response");
    };
    check(leave.error_code, "LeaveGroup")?;
    lock(state).left += 1;
    Ok(())
}

/// A connection that answered ApiVersions, retried for up to 10 s: a thousand members
/// connecting at once overflow Kafka's accept queue (`socket.listen.backlog.size`, 50), and
/// a connection the node dropped there is reset on its first request; the Java client
/// reconnects then, and so does this.
fn connect_retrying(port: u16) -> Result<Conn> {
    let t0 = Instant::now();
    loop {
        let attempt = Conn::connect(port).and_then(|mut c| c.api_versions().map(|()| c));
        match attempt {
            Ok(c) => return Ok(c),
            Err(e) if t0.elapsed() > Duration::from_secs(10) => {
                return Err(e.context("connecting a member"))
            }
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}

fn lock(state: &Mutex<GroupState>) -> std::sync::MutexGuard<'_, GroupState> {
    state.lock().unwrap_or_else(|e| e.into_inner())
}

/// One group of `members` consumers, each a thread of [`member`]: the time until all are
/// synced on one generation, the node's heartbeat CPU and RSS then, the time to leave.
fn group_run(
    system: System,
    pid: u32,
    port: u16,
    group: &str,
    members: usize,
    args: &ClientsArgs,
) -> Result<GroupRun> {
    let base = Baseline::take(system, pid);
    let state = Mutex::new(GroupState {
        synced: vec![None; members],
        ..Default::default()
    });
    let stop = AtomicBool::new(false);
    let limit = Duration::from_secs(u64::from(REBALANCE_TIMEOUT_MS as u32 / 1000) + 60);
    std::thread::scope(|s| -> Result<GroupRun> {
        let (busy0, total0) = machine_ticks();
        let t0 = Instant::now();
        let threads = (0..members)
            .map(|me| {
                let (state, stop) = (&state, &stop);
                std::thread::Builder::new()
                    .stack_size(256 << 10)
                    .spawn_scoped(s, move || {
                        if let Err(e) = member(port, group, me, args.partitions, state, stop) {
                            lock(state).error.get_or_insert(format!("{e:#}"));
                        }
                    })
                    .context("starting a member thread")
            })
            .collect::<Result<Vec<_>>>();
        let result = (|| -> Result<GroupRun> {
            let threads = threads?;
            // Stable: every member synced on the same generation.
            let generation = loop {
                {
                    let s = lock(&state);
                    if let Some(e) = &s.error {
                        bail!("a member of {group} failed: {e}");
                    }
                    if let Some(Some(g)) = s.synced.first() {
                        if s.synced.iter().all(|m| *m == Some(*g)) {
                            break *g;
                        }
                    }
                }
                if t0.elapsed() > limit {
                    bail!(
                        "{group}: {members} members not synced on one generation after {limit:?}"
                    );
                }
                std::thread::sleep(Duration::from_millis(10));
            };
            let stable_s = t0.elapsed().as_secs_f64();
            let (busy1, total1) = machine_ticks();
            println!("{members} members of {group} stable in generation {generation} after {stable_s:.2} s");
            // Steady state: every member has heartbeat at least once before the window.
            std::thread::sleep(HEARTBEAT_INTERVAL + Duration::from_secs(1));
            let heartbeat_cores = cpu_over(pid, args.idle_secs);
            let mut step = Step::default();
            base.growth(system, pid, &mut step);
            let rebalances = lock(&state).rebalances;
            let t1 = Instant::now();
            stop.store(true, Ordering::Relaxed);
            for t in &threads {
                t.thread().unpark();
            }
            for t in threads {
                let _ = t.join();
            }
            if let Some(e) = &lock(&state).error {
                bail!("a member of {group} failed: {e}");
            }
            Ok(GroupRun {
                members,
                stable_s,
                generation,
                rebalances,
                heartbeat_cores,
                rss_growth: step.rss_growth,
                heap_growth: step.heap_growth,
                leave_s: t1.elapsed().as_secs_f64(),
                machine_busy: (busy1 - busy0) as f64 / (total1 - total0).max(1) as f64,
                load: loadavg(),
            })
        })();
        // On an error, the members still running stop too.
        stop.store(true, Ordering::Relaxed);
        result
    })
}
