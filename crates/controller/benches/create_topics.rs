//! The CreateTopics benchmark of issue 5 (not a test): metadata operations per second and
//! p50/p99/max latency of CreateTopics (one topic of one partition, replication factor 3,
//! unique names) sent to the active controller of a 3-controller quorum with 1, 16 and 128
//! requests in flight at once. Three in-process controller nodes run on loopback with real
//! metadata log directories in a tempdir (fsync on: `LogConfig::metadata_log()`); three
//! brokers register over Kafka's protocol and keep heartbeating in the background so they
//! stay unfenced. For context it also measures, in the same run, a 4 KiB append + fdatasync
//! on the same disk, a raw loopback TCP round trip and an ApiVersions round trip through
//! the client `Channel` to the active controller; and, without I/O, the cost of
//! `TopicControlManager::create_topics` for one topic against images of 0 to 100,000
//! topics, since the active controller runs it on its single event loop for every
//! CreateTopics. It prints figures only.
//!
//! `cargo bench -p kraftd-controller --bench create_topics`; `KRAFTD_BENCH_REQUESTS`
//! (default 2000 per level, 500 at concurrency 1), `KRAFTD_BENCH_CONCURRENCY` (default
//! `1,16,128`), `KRAFTD_BENCH_LINGER_MS` (`controller.quorum.append.linger.ms`, default
//! Kafka's 25), `KRAFTD_BENCH_RF` (default 3) and `KRAFTD_BENCH_MANAGER_TOPICS` (topic
//! counts of the manager-only section, default `0,1000,10000,100000`; empty skips it)
//! change the run.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kraftd_controller::control::{PlacementSeed, TopicConfig, TopicControlManager};
use kraftd_controller::node::{ControllerNode, ControllerNodeConfig};
use kraftd_controller::MetadataImage;
use kraftd_net::{Channel, ClientConfig};
use kraftd_protocol::api_versions::supported_range;
use kraftd_protocol::messages::broker_registration_request::{Feature, Listener};
use kraftd_protocol::messages::create_topics_request::CreatableTopic;
use kraftd_protocol::messages::{
    ApiVersionsRequest, BrokerHeartbeatRequest, BrokerRegistrationRequest, CreateTopicsRequest,
};
use kraftd_protocol::metadata::{
    FeatureLevelRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord, UnfenceBrokerRecord,
};
use kraftd_protocol::{MetadataRecord, RequestBody, ResponseBody, Uuid};
use kraftd_raft::driver::{QuorumConfig, VoterEndpoint};

const CLUSTER_ID: &str = "bench-create-topics-id";
const BROKERS: [i32; 3] = [0, 1, 2];
/// Kafka's `broker.heartbeat.interval.ms`.
const HEARTBEAT_INTERVAL: Duration = Duration::from_millis(2000);
/// Requests one `Channel` keeps in flight (`ClientConfig::max_in_flight`'s default); more
/// concurrency opens more connections.
const PER_CHANNEL_IN_FLIGHT: usize = 16;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Sorted latencies summarized.
struct Summary {
    n: usize,
    p50: Duration,
    p99: Duration,
    max: Duration,
    mean: Duration,
}

fn summarize(mut samples: Vec<Duration>) -> Summary {
    samples.sort();
    let n = samples.len();
    let at = |q: f64| samples[((n as f64 * q).ceil() as usize).clamp(1, n) - 1];
    Summary {
        n,
        p50: at(0.50),
        p99: at(0.99),
        max: samples[n - 1],
        mean: samples.iter().sum::<Duration>() / n as u32,
    }
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1e3)
}

/// A 4 KiB append followed by fdatasync, as the metadata log flushes its active segment.
fn measure_fsync(dir: &Path, iterations: usize) -> Summary {
    let path = dir.join("fsync-probe");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("probe file opens");
    let block = vec![0x5au8; 4096];
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        file.write_all(&block).expect("probe write");
        file.sync_data().expect("probe fdatasync");
        samples.push(start.elapsed());
    }
    drop(file);
    let _ = std::fs::remove_file(&path);
    summarize(samples)
}

/// A 64-byte ping-pong over loopback TCP (nodelay), blocking sockets on two threads.
fn measure_tcp_rtt(iterations: usize) -> Summary {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("local addr");
    let echo = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        s.set_nodelay(true).expect("nodelay");
        let mut buf = [0u8; 64];
        while s.read_exact(&mut buf).is_ok() {
            if s.write_all(&buf).is_err() {
                break;
            }
        }
    });
    let mut client = std::net::TcpStream::connect(addr).expect("connect");
    client.set_nodelay(true).expect("nodelay");
    let mut buf = [7u8; 64];
    let mut samples = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let start = Instant::now();
        client.write_all(&buf).expect("ping");
        client.read_exact(&mut buf).expect("pong");
        samples.push(start.elapsed());
    }
    drop(client);
    let _ = echo.join();
    summarize(samples)
}

async fn call(channel: &Channel, body: RequestBody) -> Option<ResponseBody> {
    let version = supported_range(body.key()).max;
    channel
        .call(channel.next_correlation_id(), version, body)
        .await
        .ok()
}

fn client(port: u16, name: &str) -> Channel {
    let config = ClientConfig {
        request_timeout: Duration::from_secs(30),
        ..ClientConfig::new(name)
    };
    assert!(config.max_in_flight >= PER_CHANNEL_IN_FLIGHT);
    Channel::spawn(format!("127.0.0.1:{port}"), config)
}

fn registration(broker_id: i32) -> RequestBody {
    RequestBody::BrokerRegistration(BrokerRegistrationRequest {
        broker_id,
        cluster_id: CLUSTER_ID.to_string(),
        incarnation_id: Uuid([broker_id as u8 + 1; 16]),
        listeners: vec![Listener {
            name: "PLAINTEXT".into(),
            host: "127.0.0.1".into(),
            port: 9092 + broker_id as u16,
            security_protocol: 0,
            ..Default::default()
        }],
        features: vec![Feature {
            name: "metadata.version".into(),
            min_supported_version: 7,
            max_supported_version: 25,
            ..Default::default()
        }],
        previous_broker_epoch: -1,
        ..Default::default()
    })
}

fn heartbeat(broker_id: i32, broker_epoch: i64) -> RequestBody {
    RequestBody::BrokerHeartbeat(BrokerHeartbeatRequest {
        broker_id,
        broker_epoch,
        current_metadata_offset: i64::MAX / 2,
        want_fence: false,
        ..Default::default()
    })
}

fn create_topic(name: String, replication_factor: i16) -> RequestBody {
    RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name,
            num_partitions: 1,
            replication_factor,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    })
}

/// Registers the brokers and heartbeats until each is unfenced; returns their epochs.
async fn register_brokers(channel: &Channel) -> Vec<(i32, i64)> {
    let mut epochs = Vec::new();
    for broker in BROKERS {
        let response = call(channel, registration(broker)).await;
        let Some(ResponseBody::BrokerRegistration(r)) = response else {
            panic!("broker {broker} registration: {response:?}")
        };
        assert_eq!(r.error_code, 0, "broker {broker} registration: {r:?}");
        epochs.push((broker, r.broker_epoch));
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    for &(broker, epoch) in &epochs {
        loop {
            assert!(Instant::now() < deadline, "broker {broker} never unfenced");
            let response = call(channel, heartbeat(broker, epoch)).await;
            let unfenced = matches!(response, Some(ResponseBody::BrokerHeartbeat(ref h))
                if h.error_code == 0 && !h.is_fenced);
            if unfenced {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    epochs
}

struct Level {
    concurrency: usize,
    connections: usize,
    wall: Duration,
    latencies: Summary,
    errors: usize,
    /// The leader's `commit-latency-avg` over the level (propose to HW), ms.
    commit_avg_ms: f64,
    /// Records the leader appended during the level.
    records_appended: u64,
}

async fn run_level(
    index: usize,
    port: u16,
    leader: &ControllerNode,
    concurrency: usize,
    requests: usize,
    replication_factor: i16,
) -> Level {
    let connections = concurrency.div_ceil(PER_CHANNEL_IN_FLIGHT);
    let channels: Vec<Channel> = (0..connections)
        .map(|i| client(port, &format!("bench-c{concurrency}-{i}")))
        .collect();
    // Connect every channel before the clock starts.
    for channel in &channels {
        let r = call(
            channel,
            RequestBody::ApiVersions(ApiVersionsRequest::default()),
        )
        .await;
        assert!(matches!(r, Some(ResponseBody::ApiVersions(_))), "{r:?}");
    }
    let before = leader.raft().metrics().borrow().clone();
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|w| {
            let channel = channels[w % connections].clone();
            let next = next.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut errors = 0usize;
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= requests {
                        break;
                    }
                    let body = create_topic(
                        format!("bench-{index}-c{concurrency}-{i}"),
                        replication_factor,
                    );
                    let sent = Instant::now();
                    let response = call(&channel, body).await;
                    samples.push(sent.elapsed());
                    let ok = matches!(response, Some(ResponseBody::CreateTopics(ref r))
                        if r.topics.iter().all(|t| t.error_code == 0));
                    if !ok {
                        if errors == 0 {
                            eprintln!("CreateTopics failed: {response:?}");
                        }
                        errors += 1;
                    }
                }
                (samples, errors)
            })
        })
        .collect();
    let mut samples = Vec::with_capacity(requests);
    let mut errors = 0;
    for worker in workers {
        let (s, e) = worker.await.expect("worker");
        samples.extend(s);
        errors += e;
    }
    let wall = start.elapsed();
    let after = leader.raft().metrics().borrow().clone();
    let commits = after.commits.saturating_sub(before.commits);
    let commit_avg_ms = if commits == 0 {
        0.0
    } else {
        (after.commit_latency_total_ms - before.commit_latency_total_ms) / commits as f64
    };
    Level {
        concurrency,
        connections,
        wall,
        latencies: summarize(samples),
        errors,
        commit_avg_ms,
        records_appended: after.append_records_total - before.append_records_total,
    }
}

/// The benchmark's knobs, from the environment.
struct Settings {
    requests: Option<usize>,
    levels: Vec<usize>,
    linger_ms: Option<u64>,
    replication_factor: i16,
    /// Topic counts for the manager-only section.
    manager_topics: Vec<usize>,
}

impl Settings {
    fn from_env() -> Settings {
        Settings {
            requests: std::env::var("KRAFTD_BENCH_REQUESTS")
                .ok()
                .and_then(|v| v.parse().ok()),
            levels: std::env::var("KRAFTD_BENCH_CONCURRENCY")
                .ok()
                .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
                .unwrap_or_else(|| vec![1, 16, 128]),
            linger_ms: std::env::var("KRAFTD_BENCH_LINGER_MS")
                .ok()
                .and_then(|v| v.parse().ok()),
            replication_factor: env_or("KRAFTD_BENCH_RF", 3),
            manager_topics: std::env::var("KRAFTD_BENCH_MANAGER_TOPICS")
                .ok()
                .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
                .unwrap_or_else(|| vec![0, 1_000, 10_000, 100_000]),
        }
    }

    /// Requests at `concurrency`: fewer one at a time, unless set.
    fn requests(&self, concurrency: usize) -> usize {
        match self.requests {
            Some(n) => n,
            None if concurrency == 1 => 500,
            None => 2000,
        }
    }
}

/// A running quorum: `(node id, port, node)` and which one is active.
struct Quorum {
    nodes: Vec<(i32, u16, ControllerNode)>,
    active: usize,
    linger_ms: u64,
    ready_in: Duration,
}

async fn start_quorum(dir: &Path, linger_ms: Option<u64>) -> Quorum {
    let mut listeners = Vec::new();
    let mut voters = BTreeMap::new();
    for id in 1..=3 {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("local addr").port();
        let host = "127.0.0.1".to_string();
        voters.insert(id, VoterEndpoint { id, host, port });
        listeners.push((id, port, listener));
    }
    let started = Instant::now();
    let mut nodes = Vec::new();
    let mut linger_used = 0;
    for (id, port, listener) in listeners {
        let log_dir = dir.join(format!("node-{id}")).join("__cluster_metadata-0");
        let quorum = QuorumConfig::new(CLUSTER_ID, voters.clone(), log_dir);
        let mut config = ControllerNodeConfig::new(id, quorum);
        config.bootstrap_records = vec![MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: "metadata.version".into(),
            feature_level: 25,
            ..Default::default()
        })];
        if let Some(linger) = linger_ms {
            config.quorum.raft.append_linger_ms = linger;
        }
        linger_used = config.quorum.raft.append_linger_ms;
        let node = ControllerNode::start(config, listener)
            .await
            .expect("node starts");
        nodes.push((id, port, node));
    }
    // The active controller, with the bootstrap metadata committed.
    let deadline = started + Duration::from_secs(30);
    let active = loop {
        let found = nodes.iter().position(|(_, _, n)| {
            let status = n.status();
            let s = status.borrow();
            s.active && s.image.features.metadata_version == Some(25)
        });
        if let Some(i) = found {
            break i;
        }
        assert!(
            Instant::now() < deadline,
            "no active controller within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    Quorum {
        nodes,
        active,
        linger_ms: linger_used,
        ready_in: started.elapsed(),
    }
}

/// Heartbeats every broker every `broker.heartbeat.interval.ms` so none is fenced.
fn spawn_heartbeats(admin: Channel, epochs: Vec<(i32, i64)>) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut interval = tokio::time::interval(HEARTBEAT_INTERVAL);
        let mut failures = 0u64;
        loop {
            interval.tick().await;
            for &(broker, epoch) in &epochs {
                let response = call(&admin, heartbeat(broker, epoch)).await;
                let ok = matches!(response, Some(ResponseBody::BrokerHeartbeat(ref h))
                    if h.error_code == 0 && !h.is_fenced);
                if !ok {
                    failures += 1;
                    eprintln!("heartbeat of broker {broker} failed or fenced ({failures})");
                }
            }
        }
    })
}

/// What the cluster part of the run measured.
struct ClusterRun {
    active_id: i32,
    linger_ms: u64,
    ready_in: Duration,
    api_rtt: Summary,
    levels: Vec<Level>,
}

async fn run_cluster(dir: &Path, settings: &Settings) -> ClusterRun {
    let quorum = start_quorum(dir, settings.linger_ms).await;
    let (active_id, port, leader) = &quorum.nodes[quorum.active];
    let admin = client(*port, "bench-brokers");
    let epochs = register_brokers(&admin).await;
    let heartbeats = spawn_heartbeats(admin.clone(), epochs);

    // Context: a Kafka-protocol request the controller answers without touching the log
    // (ApiVersions), through the same client Channel.
    let mut api_rtt = Vec::new();
    for _ in 0..2000 {
        let start = Instant::now();
        let r = call(
            &admin,
            RequestBody::ApiVersions(ApiVersionsRequest::default()),
        )
        .await;
        api_rtt.push(start.elapsed());
        assert!(matches!(r, Some(ResponseBody::ApiVersions(_))));
    }

    // Warm-up, not measured: 100 topics one at a time.
    for i in 0..100 {
        let body = create_topic(format!("warmup-{i}"), settings.replication_factor);
        let _ = call(&admin, body).await;
    }

    let mut levels = Vec::new();
    for (index, &concurrency) in settings.levels.iter().enumerate() {
        let requests = settings.requests(concurrency);
        let rf = settings.replication_factor;
        levels.push(run_level(index, *port, leader, concurrency, requests, rf).await);
    }
    heartbeats.abort();
    drop(admin);
    let run = ClusterRun {
        active_id: *active_id,
        linger_ms: quorum.linger_ms,
        ready_in: quorum.ready_in,
        api_rtt: summarize(api_rtt),
        levels,
    };
    for (_, _, node) in quorum.nodes {
        let _ = node.shutdown().await;
    }
    run
}

/// `TopicControlManager::create_topics` alone (no I/O, no replay): one new topic of one
/// partition against an image already holding `topics` topics, as the active controller
/// runs it per CreateTopics.
fn manager_cost(topics: usize, calls: usize) -> Summary {
    let mut records = vec![MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: "metadata.version".into(),
        feature_level: 25,
        ..Default::default()
    })];
    for b in BROKERS {
        records.push(MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: b,
            broker_epoch: 10 + i64::from(b),
            incarnation_id: Uuid([b as u8 + 1; 16]),
            ..Default::default()
        }));
        records.push(MetadataRecord::UnfenceBroker(UnfenceBrokerRecord {
            id: b,
            epoch: 10 + i64::from(b),
            ..Default::default()
        }));
    }
    for t in 0..topics {
        let mut id = [3u8; 16];
        id[8..].copy_from_slice(&(t as u64).to_be_bytes());
        let topic_id = Uuid(id);
        records.push(MetadataRecord::Topic(TopicRecord {
            name: format!("existing-{t}"),
            topic_id,
            ..Default::default()
        }));
        records.push(MetadataRecord::Partition(PartitionRecord {
            partition_id: 0,
            topic_id,
            replicas: vec![0, 1, 2],
            isr: vec![0, 1, 2],
            leader: (t % 3) as i32,
            ..Default::default()
        }));
    }
    let image = MetadataImage::empty()
        .replay_all(&records)
        .expect("records replay");
    drop(records);
    let manager = TopicControlManager::new(TopicConfig::default());
    let mut samples = Vec::with_capacity(calls);
    let mut next_id = 0u64;
    for i in 0..calls {
        let RequestBody::CreateTopics(request) = create_topic(format!("new-{i}"), 3) else {
            unreachable!()
        };
        let seed = PlacementSeed {
            start_index: i as u32,
            replica_shift: 0,
        };
        let start = Instant::now();
        let result = manager.create_topics(
            &image,
            &request,
            || {
                next_id += 1;
                let mut id = [9u8; 16];
                id[8..].copy_from_slice(&next_id.to_be_bytes());
                Uuid(id)
            },
            seed,
        );
        samples.push(start.elapsed());
        assert_eq!(
            result.response.topics[0].error_code, 0,
            "{:?}",
            result.response
        );
    }
    summarize(samples)
}

fn us(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e6)
}

fn main() {
    let settings = Settings::from_env();
    let dir = tempfile::tempdir().expect("tempdir");
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());

    // Context, measured before the cluster starts so nothing in this process competes.
    let fsync = measure_fsync(dir.path(), 200);
    let rtt = measure_tcp_rtt(2000);

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let run = runtime.block_on(run_cluster(dir.path(), &settings));
    drop(runtime);

    let scaling: Vec<(usize, Summary)> = settings
        .manager_topics
        .iter()
        .copied()
        .map(|topics| (topics, manager_cost(topics, 200)))
        .collect();

    let rf = settings.replication_factor;
    println!(
        "create_topics: 3 controllers in one process on loopback, {cores} cores, metadata logs \
         (fsync on) in {}",
        dir.path().display()
    );
    println!(
        "  active controller: node {} (ready in {} ms); controller.quorum.append.linger.ms={}; \
         {} brokers registered and heartbeating",
        run.active_id,
        run.ready_in.as_millis(),
        run.linger_ms,
        BROKERS.len()
    );
    println!();
    println!("context (same run, same disk):");
    println!(
        "  {:<46} {:>9} {:>9} {:>9} {:>9}",
        "", "p50 ms", "p99 ms", "max ms", "mean ms"
    );
    for (name, s) in [
        ("4 KiB append + fdatasync (n=200)", &fsync),
        ("loopback TCP 64 B round trip (n=2000)", &rtt),
        ("ApiVersions via Channel to active (n=2000)", &run.api_rtt),
    ] {
        println!(
            "  {:<46} {:>9} {:>9} {:>9} {:>9}",
            name,
            ms(s.p50),
            ms(s.p99),
            ms(s.max),
            ms(s.mean)
        );
    }
    println!();
    println!(
        "CreateTopics (1 topic, 1 partition, RF {rf}, unique names) to the active controller, \
         after 100 warm-up topics:"
    );
    println!(
        "  {:>11} {:>5} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>13} {:>8}",
        "concurrency",
        "conns",
        "N",
        "errors",
        "ops/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "commit avg ms",
        "records"
    );
    for l in &run.levels {
        println!(
            "  {:>11} {:>5} {:>6} {:>6} {:>9.1} {:>9} {:>9} {:>9} {:>13.3} {:>8}",
            l.concurrency,
            l.connections,
            l.latencies.n,
            l.errors,
            l.latencies.n as f64 / l.wall.as_secs_f64(),
            ms(l.latencies.p50),
            ms(l.latencies.p99),
            ms(l.latencies.max),
            l.commit_avg_ms,
            l.records_appended,
        );
    }
    println!("  commit avg ms: the leader's commit-latency-avg over the level (propose to HW)");
    println!("  records: records the leader appended in the level (2 per CreateTopics)");
    if scaling.is_empty() {
        return;
    }
    println!();
    println!("TopicControlManager::create_topics alone (one new topic, no I/O, n=200 calls):");
    println!(
        "  {:>16} {:>9} {:>9} {:>9}",
        "topics in image", "p50 us", "p99 us", "mean us"
    );
    for (topics, s) in &scaling {
        println!(
            "  {:>16} {:>9} {:>9} {:>9}",
            topics,
            us(s.p50),
            us(s.p99),
            us(s.mean)
        );
    }
}
