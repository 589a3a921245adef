//! `cargo xtask bench rebalance`: how long after a broker returns leadership is even again,
//! every partition led by its preferred replica, kraftd beside Apache Kafka 4.4.0 with the
//! same `leader.imbalance.check.interval.seconds` (issue 30). A benchmark: it prints figures
//! and asserts nothing.
//!
//! Each system runs 3 controllers and 3 brokers (as `bench failover` starts them), the
//! controllers with the check interval of `--interval-seconds`, and a topic of 30 partitions
//! at RF 3. Each round: wait until every partition is fully replicated and on its preferred
//! replica; stop one broker with SIGTERM (a controlled shutdown moves its leaderships away)
//! and wait until it leads nothing; start it again, then poll Metadata (v12, from another
//! broker, every 50 ms) and time from the start to (a) the broker back in every ISR and (b)
//! every partition on its preferred replica again. Both controllers schedule a balancing
//! round one interval after they see the imbalance, so (b) is at most about (a) plus the
//! interval for either; what differs is the restart and catch-up in (a) and how soon after
//! the round leadership has moved.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use kraftd_protocol::messages::{
    create_topics_request, metadata_request, CreateTopicsRequest, MetadataRequest,
};
use kraftd_protocol::{RequestBody, ResponseBody};

use super::cluster::Cluster;
use super::failover::call;
use super::kafka::kafka_classpath;
use super::produce::{loadavg, Against, System};

const TOPIC: &str = "rebalance";
const PARTITIONS: i32 = 30;
const POLL: Duration = Duration::from_millis(50);

#[derive(clap::Args, Debug)]
pub(super) struct RebalanceArgs {
    /// Rounds (stop a broker, start it, wait for even leadership) per system; the brokers
    /// take turns.
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// `leader.imbalance.check.interval.seconds` of both systems' controllers (Kafka's
    /// default, 300, would make a round last minutes).
    #[arg(long, default_value_t = 5)]
    interval_seconds: u64,
    /// Which system to run: kraftd, Apache Kafka from the jars, or both one after the other.
    #[arg(long, value_enum, default_value_t = Against::Both)]
    against: Against,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
}

/// One round, in seconds from the broker's start.
struct Round {
    broker: u32,
    in_isr: f64,
    even: f64,
}

pub(super) fn rebalance(root: &Path, args: RebalanceArgs) -> Result<()> {
    let started = Instant::now();
    let systems = match args.against {
        Against::Kraftd => vec![System::Kraftd],
        Against::Kafka => vec![System::Kafka],
        Against::Both => vec![System::Kraftd, System::Kafka],
    };
    let classpath = kafka_classpath(root)?;
    let bin = root.join("target").join("release").join("kraftd");
    if systems.contains(&System::Kraftd) {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        crate::run(root, &cargo, &["build", "--release", "--bin", "kraftd"])?;
    }
    let dir = std::env::temp_dir().join(format!("kraftd-bench-rebalance-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    let controller_config = format!(
        "leader.imbalance.check.interval.seconds={}\n",
        args.interval_seconds
    );
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
            System::Kraftd => {
                Cluster::start_kraftd_with_controllers(&bin, &sys_dir, "", &controller_config, &[])
            }
            System::Kafka => Cluster::start_kafka_with_controllers(
                &classpath,
                &sys_dir,
                "",
                &controller_config,
                &[],
                3,
            ),
        }?;
        let outcome = rounds(&mut cluster, args.rounds);
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
    report(&results, args.interval_seconds);
    println!(
        "(bench took {:.0} s; load average at the end {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

/// Each partition as Metadata says: (leader, replicas, ISR).
pub(super) type Partitions = Vec<(i32, Vec<i32>, Vec<i32>)>;

/// The partitions of `topic`, or of every topic (internal ones too) for `None`, as the
/// broker on `port` answers Metadata v12.
pub(super) fn partitions_of(port: u16, topic: Option<&str>) -> Result<Partitions> {
    let body = RequestBody::Metadata(MetadataRequest {
        topics: topic.map(|name| {
            vec![metadata_request::MetadataRequestTopic {
                name: Some(name.to_string()),
                ..Default::default()
            }]
        }),
        ..Default::default()
    });
    let ResponseBody::Metadata(r) = call(port, 12, body, Duration::from_secs(2))? else {
        bail!("not a Metadata response");
    };
    let topics: Vec<_> = r.topics.into_iter().filter(|t| t.error_code == 0).collect();
    if let (Some(name), true) = (topic, topics.is_empty()) {
        bail!("{name} is not in Metadata");
    }
    Ok(topics
        .into_iter()
        .flat_map(|t| t.partitions)
        .map(|p| (p.leader_id, p.replica_nodes, p.isr_nodes))
        .collect())
}

fn fully_replicated(parts: &Partitions) -> bool {
    parts.len() == PARTITIONS as usize
        && parts
            .iter()
            .all(|(leader, replicas, isr)| *leader >= 0 && isr.len() == replicas.len())
}

fn on_preferred(parts: &Partitions) -> bool {
    parts.len() == PARTITIONS as usize
        && parts
            .iter()
            .all(|(leader, replicas, _)| replicas.first() == Some(leader))
}

/// Polls `port`'s Metadata of `topic` (of every topic for `None`) until `done` holds of its
/// partitions, for at most `limit`.
pub(super) fn wait_for(
    port: u16,
    topic: Option<&str>,
    limit: Duration,
    what: &str,
    done: impl Fn(&Partitions) -> bool,
) -> Result<()> {
    let deadline = Instant::now() + limit;
    let mut last = String::new();
    while Instant::now() < deadline {
        match partitions_of(port, topic) {
            Ok(parts) if done(&parts) => return Ok(()),
            Ok(parts) => last = format!("{parts:?}"),
            Err(e) => last = format!("{e:#}"),
        }
        std::thread::sleep(POLL);
    }
    Err(anyhow!("{what}: not within {limit:?} (last: {last})"))
}

fn create_topic(port: u16) -> Result<()> {
    let body = RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![create_topics_request::CreatableTopic {
            name: TOPIC.to_string(),
            num_partitions: PARTITIONS,
            replication_factor: 3,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    });
    match call(port, 7, body, Duration::from_secs(35))? {
        ResponseBody::CreateTopics(r) => match r.topics.first().map(|t| t.error_code) {
            Some(0) => Ok(()),
            code => bail!("CreateTopics {TOPIC}: error code {code:?}"),
        },
        other => bail!("not a CreateTopics response: {other:?}"),
    }
}

fn rounds(cluster: &mut Cluster, n: u32) -> Result<Vec<Round>> {
    let brokers: Vec<(u32, u16)> = cluster
        .nodes
        .iter()
        .filter_map(|node| Some((node.id, node.broker_port?)))
        .collect();
    create_topic(brokers[0].1)?;
    let mut out = Vec::new();
    for round in 0..n {
        let (id, _) = brokers[round as usize % brokers.len()];
        let (_, observer) = *brokers
            .iter()
            .find(|(b, _)| *b != id)
            .context("one broker")?;
        wait_for(
            observer,
            Some(TOPIC),
            Duration::from_secs(600),
            "even leadership",
            |p| fully_replicated(p) && on_preferred(p),
        )?;
        let node = cluster
            .nodes
            .iter_mut()
            .find(|node| node.id == id)
            .context("no such broker")?;
        let mut child = node.child.take().context("the broker is not running")?;
        Command::new("kill").arg(child.id().to_string()).status()?;
        child.wait()?;
        wait_for(
            observer,
            Some(TOPIC),
            Duration::from_secs(60),
            "leadership moved off",
            |p| p.iter().all(|(leader, _, _)| *leader != id as i32),
        )?;
        let respawn = node.respawn.as_ref().context("cannot restart")?;
        let t0 = Instant::now();
        node.child = Some(respawn()?);
        let deadline = t0 + Duration::from_secs(900);
        let mut in_isr = None;
        let even = loop {
            if Instant::now() > deadline {
                bail!("broker {id}: leadership not even within 900 s of its start");
            }
            if let Ok(parts) = partitions_of(observer, Some(TOPIC)) {
                if in_isr.is_none() && fully_replicated(&parts) {
                    in_isr = Some(t0.elapsed().as_secs_f64());
                }
                if in_isr.is_some() && on_preferred(&parts) {
                    break t0.elapsed().as_secs_f64();
                }
            }
            std::thread::sleep(POLL);
        };
        let r = Round {
            broker: id,
            in_isr: in_isr.unwrap_or(even),
            even,
        };
        println!(
            "round {}: broker {} back in every ISR after {:.2} s, leadership even after {:.2} s",
            round + 1,
            r.broker,
            r.in_isr,
            r.even
        );
        out.push(r);
    }
    Ok(out)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn report(results: &[(System, Result<Vec<Round>, String>)], interval: u64) {
    println!();
    println!(
        "leadership after a broker returns (30 partitions, RF 3, \
         leader.imbalance.check.interval.seconds={interval}), median of the rounds:"
    );
    println!(
        "{:<10} | {:>22} | {:>24} | {:>28}",
        "system", "back in every ISR (s)", "leadership even (s)", "even after back in ISR (s)"
    );
    let mut medians = Vec::new();
    for (system, result) in results {
        match result {
            Ok(rounds) if !rounds.is_empty() => {
                let isr = median(rounds.iter().map(|r| r.in_isr).collect());
                let even = median(rounds.iter().map(|r| r.even).collect());
                let gap = median(rounds.iter().map(|r| r.even - r.in_isr).collect());
                println!(
                    "{:<10} | {isr:>22.2} | {even:>24.2} | {gap:>28.2}",
                    system.name()
                );
                medians.push((*system, even));
            }
            Ok(_) => println!("{:<10} | no rounds", system.name()),
            Err(e) => println!("{:<10} | failed: {e}", system.name()),
        }
    }
    if let (Some((_, k)), Some((_, a))) = (
        medians.iter().find(|(s, _)| *s == System::Kraftd),
        medians.iter().find(|(s, _)| *s == System::Kafka),
    ) {
        println!(
            "kraftd/Kafka, time to even leadership: {:.2} (below 1 is better for kraftd)",
            k / a
        );
    }
}
