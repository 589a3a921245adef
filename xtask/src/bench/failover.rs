//! `cargo xtask bench failover`: how long a crash of the active controller keeps an admin
//! request from succeeding, kraftd beside Apache Kafka 4.4.0 on the same machine. A
//! benchmark: it prints figures and asserts nothing.
//!
//! Each system runs 3 controllers and 3 brokers with Kafka's default timeouts (kraftd as
//! `bench produce` starts it; Kafka with controllers 100-102 in a static quorum, a 512 MiB
//! heap per JVM). Each round: find the active controller (DescribeQuorum to the
//! controllers), `kill -9` it, then send CreateTopics (one partition, RF 3, `timeout_ms`
//! 1000) to the first broker over a fresh connection with a 1 s read timeout, again after
//! 100 ms (the admin client's `retry.backoff.ms`) on any error or timeout, until one
//! succeeds (TOPIC_ALREADY_EXISTS counts: an earlier attempt's topic was committed). The
//! round's time runs from the kill to that success. Then the killed controller is started
//! again and the next round waits until the quorum is whole (every voter caught up after
//! the restart, in the leader's DescribeQuorum) and every broker unfenced.
//!
//! For kraftd each round is broken down from the nodes' own logs (UTC timestamps, the same
//! clock as the kill's): detection = kill → the first surviving voter's "starting a
//! pre-vote" line (and which path: the connection close or `fetch.timeout.ms`); election
//! → the new leader's "elected leader"; first commit → the new leader's own "leader change"
//! notice (released once the epoch's LeaderChange record commits); brokers → the first
//! broker's "leader change" naming the new leader; forwarding → the CreateTopics success
//! (retries of the forwarded request until the new controller answered).

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, bail, Context, Result};
use kraftd_protocol::messages::{create_topics_request, CreateTopicsRequest};
use kraftd_protocol::{RequestBody, ResponseBody};

use super::cluster::Cluster;
use super::kafka::kafka_classpath;
use super::produce::{loadavg, Against, System};
use crate::cluster::Quorum;

/// The admin client's `retry.backoff.ms`.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// The client's request timeout (and CreateTopics' `timeout_ms`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

#[derive(clap::Args, Debug)]
pub(super) struct FailoverArgs {
    /// Rounds (kill, CreateTopics until it succeeds, restart) per system.
    #[arg(long, default_value_t = 8)]
    rounds: u32,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
    /// Run this kraftd binary instead of building `target/release/kraftd` (to compare a
    /// build kept aside, as the figures before a change).
    #[arg(long)]
    kraftd_bin: Option<std::path::PathBuf>,
}

pub(super) struct Round {
    /// The active controller killed.
    pub(super) killed: u32,
    /// The controller active once CreateTopics succeeded.
    pub(super) leader_after: Option<u32>,
    /// From the kill to the CreateTopics that succeeded.
    pub(super) secs: f64,
    attempts: u32,
    breakdown: Option<Breakdown>,
}

#[cfg(test)]
impl Round {
    /// A round that killed `killed` and took `secs`, nothing else known (`bench mixed`'s
    /// tests of its table).
    pub(super) fn measured(killed: u32, secs: f64) -> Round {
        Round {
            killed,
            leader_after: None,
            secs,
            attempts: 1,
            breakdown: None,
        }
    }
}

/// kraftd's round, in ms since the kill (each step's end).
#[derive(Default)]
struct Breakdown {
    path: &'static str,
    detected: Option<f64>,
    elected: Option<f64>,
    committed: Option<f64>,
    brokers: Option<f64>,
}

pub(super) fn failover(root: &Path, args: FailoverArgs) -> Result<()> {
    let started = Instant::now();
    let systems = match args.against {
        Against::Kraftd => vec![System::Kraftd],
        Against::Kafka => vec![System::Kafka],
        Against::Both => vec![System::Kraftd, System::Kafka],
    };
    let classpath = kafka_classpath(root)?;
    let bin = args
        .kraftd_bin
        .clone()
        .unwrap_or_else(|| root.join("target").join("release").join("kraftd"));
    if systems.contains(&System::Kraftd) && args.kraftd_bin.is_none() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        crate::run(root, &cargo, &["build", "--release", "--bin", "kraftd"])?;
    }
    let dir = std::env::temp_dir().join(format!("kraftd-bench-failover-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    let mut results = Vec::new();
    for system in systems {
        let sys_dir = dir.join(system.name().to_lowercase());
        std::fs::create_dir_all(&sys_dir)?;
        println!(
            "==> {}: 3 controllers + 3 brokers (load average {})",
            system.name(),
            loadavg()
        );
        let mut cluster = match system {
            System::Kraftd => Cluster::start_kraftd(&bin, &sys_dir, ""),
            System::Kafka => Cluster::start_kafka_with(&classpath, &sys_dir, "", &[], 3),
        }?;
        let outcome = rounds(
            &mut cluster,
            &sys_dir,
            args.rounds,
            system == System::Kraftd,
        );
        cluster.stop();
        if let Err(e) = &outcome {
            eprintln!(
                "{}: {e:#}; its node logs are in {} (kept)",
                system.name(),
                sys_dir.display()
            );
        }
        results.push((system, outcome.map_err(|e| format!("{e:#}"))));
    }
    if !args.keep && results.iter().all(|(_, r)| r.is_ok()) {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(&results);
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

/// `n` rounds on `cluster` (3 controllers, ids 1-3 for `breakdown`), each: kill -9 of the
/// active controller, CreateTopics through the first broker until one succeeds, the killed
/// controller started again and the quorum whole again. `breakdown`: every controller and
/// the first broker are kraftd nodes whose logs are `dir/node-<id>/kraftd.log`, read for
/// the time of each step.
pub(super) fn rounds(
    cluster: &mut Cluster,
    dir: &Path,
    n: u32,
    breakdown: bool,
) -> Result<Vec<Round>> {
    let broker_port = cluster
        .nodes
        .iter()
        .find_map(|n| n.broker_port)
        .context("no broker")?;
    let first_broker = cluster
        .nodes
        .iter()
        .find(|n| n.broker_port.is_some())
        .map(|n| n.id)
        .context("no broker")?;
    wait_quorum_whole(cluster, 0.0)?;
    let mut out = Vec::new();
    for round in 1..=n {
        std::thread::sleep(Duration::from_secs(1));
        let leader = active_controller(cluster)?;
        let node = cluster
            .nodes
            .iter_mut()
            .find(|n| n.id == leader as u32)
            .with_context(|| format!("no node {leader}"))?;
        let mut child = node.child.take().context("the leader is not running")?;
        let killed_at_ms = unix_ms();
        let t0 = Instant::now();
        child.kill()?;
        let _ = child.wait();
        let topic = format!("failover-{round}");
        let attempts = create_topic_until_ok(broker_port, &topic, Duration::from_secs(120))?;
        let secs = t0.elapsed().as_secs_f64();
        let breakdown =
            breakdown.then(|| kraftd_breakdown(dir, leader as u32, first_broker, killed_at_ms));
        let leader_after = active_controller(cluster).ok().map(|l| l as u32);
        let r = Round {
            killed: leader as u32,
            leader_after,
            secs,
            attempts,
            breakdown,
        };
        println!("round {round}: {}", round_line(&r));
        out.push(r);
        let restarted_ms = unix_ms();
        let node = cluster
            .nodes
            .iter_mut()
            .find(|n| n.id == leader as u32)
            .context("node gone")?;
        let respawn = node.respawn.as_ref().context("cannot restart")?;
        node.child = Some(respawn()?);
        wait_quorum_whole(cluster, restarted_ms)?;
        cluster.wait_brokers(Duration::from_secs(60))?;
    }
    Ok(out)
}

fn round_line(r: &Round) -> String {
    let after = r.leader_after.map_or("?".to_string(), |l| l.to_string());
    let mut line = format!(
        "killed {}, CreateTopics ok after {:.2} s ({} attempts), {after} active then",
        r.killed, r.secs, r.attempts
    );
    if let Some(b) = &r.breakdown {
        let ms = |x: Option<f64>| x.map_or("?".to_string(), |v| format!("{v:.0}"));
        line.push_str(&format!(
            "; ms since kill: detected {} ({}), elected {}, first commit {}, broker knows {}, \
             ok {:.0}",
            ms(b.detected),
            b.path,
            ms(b.elected),
            ms(b.committed),
            ms(b.brokers),
            r.secs * 1000.0
        ));
    }
    line
}

fn unix_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64() * 1000.0)
        .unwrap_or(0.0)
}

/// [`crate::cluster::call`] to `127.0.0.1:port`.
pub(super) fn call(
    port: u16,
    version: i16,
    body: RequestBody,
    timeout: Duration,
) -> Result<ResponseBody> {
    crate::cluster::call(
        SocketAddr::from(([127, 0, 0, 1], port)),
        version,
        body,
        timeout,
    )
}

fn describe_quorum(port: u16) -> Result<Quorum> {
    crate::cluster::describe_quorum(SocketAddr::from(([127, 0, 0, 1], port)))
}

/// The leader as the first running controller that answers as leader says.
fn active_controller(cluster: &Cluster) -> Result<i32> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        for node in cluster.nodes.iter().filter(|n| n.child.is_some()) {
            if let Some(port) = node.controller_port {
                if let Ok((leader, ..)) = describe_quorum(port) {
                    if leader == node.id as i32 {
                        return Ok(leader);
                    }
                }
            }
        }
        if Instant::now() > deadline {
            bail!("no controller leads after 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until the leader's DescribeQuorum shows every voter caught up since `since_ms`
/// (Unix ms) with an end offset at the high watermark or past it.
fn wait_quorum_whole(cluster: &Cluster, since_ms: f64) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(leader) = active_controller(cluster) {
            let port = cluster
                .nodes
                .iter()
                .find(|n| n.id == leader as u32)
                .and_then(|n| n.controller_port)
                .context("leader without a port")?;
            if let Ok((_, _, hw, voters)) = describe_quorum(port) {
                let whole = voters.len() == 3
                    && voters
                        .iter()
                        .all(|(_, end, caught_up)| *end >= hw && *caught_up as f64 >= since_ms);
                if whole {
                    return Ok(());
                }
            }
        }
        if Instant::now() > deadline {
            bail!("the quorum is not whole after 120 s");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// CreateTopics `topic` through the broker on `port` until one succeeds; the attempts.
fn create_topic_until_ok(port: u16, topic: &str, limit: Duration) -> Result<u32> {
    let deadline = Instant::now() + limit;
    let mut attempts = 0;
    let mut last = String::new();
    while Instant::now() < deadline {
        attempts += 1;
        let body = RequestBody::CreateTopics(CreateTopicsRequest {
            topics: vec![create_topics_request::CreatableTopic {
                name: topic.to_string(),
                num_partitions: 1,
                replication_factor: 3,
                ..Default::default()
            }],
            timeout_ms: REQUEST_TIMEOUT.as_millis() as i32,
            ..Default::default()
        });
        match call(port, 7, body, REQUEST_TIMEOUT) {
            Ok(ResponseBody::CreateTopics(r)) => {
                let code = r.topics.first().map_or(-1, |t| t.error_code);
                // NONE, or TOPIC_ALREADY_EXISTS: an earlier attempt's topic committed.
                if code == 0 || code == 36 {
                    return Ok(attempts);
                }
                last = format!("error code {code}");
            }
            Ok(_) => last = "not a CreateTopics response".into(),
            Err(e) => last = format!("{e:#}"),
        }
        std::thread::sleep(RETRY_BACKOFF);
    }
    Err(anyhow!(
        "CreateTopics {topic} did not succeed within {limit:?} (last: {last})"
    ))
}

// ---------------------------------------------------------------------------------------------
// kraftd's breakdown from the node logs.

/// Unix ms of a tracing line's leading `2026-12-01T19:50:49.115713Z`.
fn line_ms(line: &str) -> Option<f64> {
    let ts = line.split_whitespace().next()?;
    let (date, time) = ts.strip_suffix('Z')?.split_once('T')?;
    let mut d = date.split('-').map(|x| x.parse::<i64>());
    let (y, m, day) = (d.next()?.ok()?, d.next()?.ok()?, d.next()?.ok()?);
    let mut t = time.split(':');
    let (h, min) = (
        t.next()?.parse::<i64>().ok()?,
        t.next()?.parse::<i64>().ok()?,
    );
    let s: f64 = t.next()?.parse().ok()?;
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 86_400 + h * 3600 + min * 60) as f64 + s) * 1000.0)
}

/// Lines of node `id`'s log at or after `since_ms` that contain `needle`, with their time.
fn find_lines(dir: &Path, id: u32, since_ms: f64, needle: &str) -> Vec<(f64, String)> {
    let text = std::fs::read_to_string(dir.join(format!("node-{id}")).join("kraftd.log"))
        .unwrap_or_default();
    text.lines()
        .filter(|l| l.contains(needle))
        .filter_map(|l| Some((line_ms(l)?, l.to_string())))
        .filter(|(t, _)| *t >= since_ms)
        .collect()
}

fn kraftd_breakdown(dir: &Path, killed: u32, broker: u32, kill_ms: f64) -> Breakdown {
    let mut b = Breakdown {
        path: "?",
        ..Default::default()
    };
    let survivors: Vec<u32> = (1..=3).filter(|id| *id != killed).collect();
    let rel = |t: f64| Some(t - kill_ms);
    let first = |needle: &str| {
        survivors
            .iter()
            .flat_map(|id| {
                find_lines(dir, *id, kill_ms, needle)
                    .into_iter()
                    .map(move |(t, l)| (t, *id, l))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
    };
    if let Some((t, _, line)) = first("starting a pre-vote") {
        b.detected = rel(t);
        b.path = if line.contains("fetch.timeout") {
            "fetch timeout"
        } else {
            "connection closed"
        };
    }
    let Some((t, leader, _)) = first("elected leader") else {
        return b;
    };
    b.elected = rel(t);
    let named = format!("leader_id=Some({leader})");
    b.committed = find_lines(dir, leader, kill_ms, "leader change")
        .into_iter()
        .find(|(_, l)| l.contains(&named))
        .and_then(|(t, _)| rel(t));
    b.brokers = find_lines(dir, broker, kill_ms, "leader change")
        .into_iter()
        .find(|(_, l)| l.contains(&named))
        .and_then(|(t, _)| rel(t));
    b
}

// ---------------------------------------------------------------------------------------------

/// The median of `v` (the mean of the middle two for an even count); NaN when empty.
pub(super) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn report(results: &[(System, Result<Vec<Round>, String>)]) {
    println!();
    println!(
        "bench failover: kill -9 of the active controller (3 controllers + 3 brokers, default \
         timeouts), then CreateTopics through a broker with 1 s timeouts until one succeeds"
    );
    for (system, outcome) in results {
        let rounds = match outcome {
            Ok(r) => r,
            Err(e) => {
                println!(
                    "{:<8} not measured: {}",
                    system.name(),
                    e.lines().next().unwrap_or("")
                );
                continue;
            }
        };
        for (i, r) in rounds.iter().enumerate() {
            println!("{:<8} round {}: {}", system.name(), i + 1, round_line(r));
        }
        let secs: Vec<f64> = rounds.iter().map(|r| r.secs).collect();
        let max = secs.iter().copied().fold(f64::NAN, f64::max);
        println!(
            "{:<8} {} rounds: median {:.2} s, max {:.2} s, min {:.2} s",
            system.name(),
            secs.len(),
            median(secs.clone()),
            max,
            secs.iter().copied().fold(f64::NAN, f64::min)
        );
        let steps: Vec<&Breakdown> = rounds.iter().filter_map(|r| r.breakdown.as_ref()).collect();
        if !steps.is_empty() {
            let col = |f: &dyn Fn(&Breakdown) -> Option<f64>| {
                median(steps.iter().filter_map(|b| f(b)).collect())
            };
            let detect = col(&|b| b.detected);
            let elect = col(&|b| Some(b.elected? - b.detected?));
            let commit = col(&|b| Some(b.committed? - b.elected?));
            let learn = col(&|b| Some(b.brokers? - b.committed?.min(b.brokers?)));
            let forward = median(
                rounds
                    .iter()
                    .filter_map(|r| Some(r.secs * 1000.0 - r.breakdown.as_ref()?.brokers?))
                    .collect(),
            );
            let by_close = steps
                .iter()
                .filter(|b| b.path == "connection closed")
                .count();
            println!(
                "{:<8} median ms per step: detection {detect:.0}, election {elect:.0}, first \
                 commit {commit:.0}, brokers learn {learn:.0}, forwarding {forward:.0} \
                 (detected by connection close in {by_close} of {} rounds)",
                system.name(),
                steps.len()
            );
        }
    }
}
