//! `cargo xtask bench request-metrics`: what the request metrics cost per request. A
//! benchmark, not a test: it prints figures and never asserts on them.
//!
//! Two kraftd clusters run side by side from the release build (3 controllers + 3 brokers
//! each, as `bench produce` starts them), identical but for one broker setting:
//! `request.metrics.enable=true` (the default) in one, `false` in the other (kraftd's own
//! switch; Kafka has none, its `metrics.recording.level` leaves request metrics on). Each
//! gets a topic of one partition, replication factor 3, `min.insync.replicas=2`. One client
//! thread then sends Produce requests (v9, acks=all, one 1 KiB record) one at a time to
//! each cluster's leader in turn, alternating which goes first, so both see the same
//! machine at the same moments (this machine is shared: drift hits both alike), and times
//! each round trip. It prints p50/p99/p99.9 and the mean of both, and their difference:
//! the cost of collecting request metrics on a produce (the leader's Produce plus the
//! followers' Fetches it waits for), as a client sees it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kraftd_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kraftd_protocol::messages::{
    CreateTopicsRequest, MetadataRequest, ProduceRequest, RequestHeader,
};
use kraftd_protocol::records::RecordBatchBuilder;
use kraftd_protocol::{RequestBody, ResponseBody};

use super::cluster::Cluster;
use super::produce::loadavg;

const TOPIC: &str = "bench";
const PRODUCE_VERSION: i16 = 9;
const RECORD_BYTES: usize = 1024;

#[derive(clap::Args, Debug)]
pub(super) struct RequestMetricsArgs {
    /// Produce requests timed per cluster (after the warm-up).
    #[arg(long, default_value_t = 20_000)]
    requests: u64,
    /// Produce requests per cluster before timing starts.
    #[arg(long, default_value_t = 2_000)]
    warmup: u64,
    /// Keep the temp directory (node logs and data) afterwards.
    #[arg(long)]
    keep: bool,
}

/// A blocking Kafka-protocol connection: one request at a time.
struct Conn {
    stream: TcpStream,
    correlation_id: i32,
}

impl Conn {
    fn open(port: u16) -> Result<Conn> {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .with_context(|| format!("connecting to 127.0.0.1:{port}"))?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        Ok(Conn {
            stream,
            correlation_id: 0,
        })
    }

    fn call(&mut self, version: i16, body: RequestBody) -> Result<ResponseBody> {
        self.correlation_id += 1;
        let api = body.key();
        let header = RequestHeader {
            request_api_key: api.code(),
            request_api_version: version,
            correlation_id: self.correlation_id,
            client_id: Some("xtask-bench-request-metrics".into()),
            ..Default::default()
        };
        let frame = encode_request(&header, &body)?.into_bytes();
        let mut out = Vec::with_capacity(frame.len() + 4);
        out.extend_from_slice(&(frame.len() as i32).to_be_bytes());
        out.extend_from_slice(&frame);
        self.stream.write_all(&out)?;
        let mut size = [0u8; 4];
        self.stream.read_exact(&mut size)?;
        let mut buf = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
        self.stream.read_exact(&mut buf)?;
        let (header, response) = decode_response(api, version, Bytes::from(buf))?;
        if header.correlation_id != self.correlation_id {
            bail!(
                "correlation id {} for {}",
                header.correlation_id,
                self.correlation_id
            );
        }
        Ok(response)
    }
}

/// One cluster under test and its leader connection.
struct Side {
    name: &'static str,
    cluster: Cluster,
    leader: Option<Conn>,
    batch: Bytes,
    latencies_ns: Vec<u64>,
}

impl Side {
    /// Creates the topic and connects to its leader once it has a full ISR.
    fn prepare(&mut self) -> Result<()> {
        let port = self
            .cluster
            .nodes
            .iter()
            .find_map(|n| n.broker_port)
            .ok_or_else(|| anyhow!("no broker"))?;
        let mut any = Conn::open(port)?;
        let create = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: TOPIC.into(),
                num_partitions: 1,
                replication_factor: 3,
                configs: vec![CreatableTopicConfig {
                    name: "min.insync.replicas".into(),
                    value: Some("2".into()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            timeout_ms: 30_000,
            ..Default::default()
        };
        match any.call(7, RequestBody::CreateTopics(create))? {
            ResponseBody::CreateTopics(r)
                if r.topics
                    .iter()
                    .all(|t| t.error_code == 0 || t.error_code == 36) => {}
            other => bail!("{}: CreateTopics failed: {other:?}", self.name),
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let metadata = MetadataRequest {
                topics: Some(vec![
                    kraftd_protocol::messages::metadata_request::MetadataRequestTopic {
                        name: Some(TOPIC.into()),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            };
            let ResponseBody::Metadata(m) = any.call(12, RequestBody::Metadata(metadata))? else {
                bail!("not a Metadata response");
            };
            let partition = m
                .topics
                .iter()
                .flat_map(|t| &t.partitions)
                .find(|p| p.error_code == 0 && p.isr_nodes.len() == 3);
            let leader_port = partition.and_then(|p| {
                m.brokers
                    .iter()
                    .find(|b| b.node_id == p.leader_id)
                    .map(|b| b.port as u16)
            });
            if let Some(port) = leader_port {
                println!(
                    "{}: topic {TOPIC} led by the broker on port {port}",
                    self.name
                );
                self.leader = Some(Conn::open(port)?);
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "{}: topic {TOPIC} has no leader with a full ISR after 60 s",
                    self.name
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// One acks=all produce of one record; its round trip in nanoseconds.
    fn produce(&mut self) -> Result<u64> {
        let request = ProduceRequest {
            acks: -1,
            timeout_ms: 30_000,
            topic_data: vec![TopicProduceData {
                name: TOPIC.into(),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(self.batch.clone()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let leader = self.leader.as_mut().ok_or_else(|| anyhow!("no leader"))?;
        let sent = Instant::now();
        let response = leader.call(PRODUCE_VERSION, RequestBody::Produce(request))?;
        let took = sent.elapsed().as_nanos() as u64;
        let ResponseBody::Produce(r) = response else {
            bail!("not a Produce response");
        };
        let error = r
            .responses
            .iter()
            .flat_map(|t| &t.partition_responses)
            .map(|p| p.error_code)
            .find(|c| *c != 0);
        match error {
            Some(code) => bail!("{}: produce failed with error code {code}", self.name),
            None => Ok(took),
        }
    }
}

fn batch() -> Result<Bytes> {
    let mut b = RecordBatchBuilder::new(0);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    b.append(
        now,
        None,
        Some(Bytes::from(vec![b'x'; RECORD_BYTES])),
        Vec::new(),
    )?;
    Ok(b.build()?)
}

/// The q-quantile of sorted values (nearest rank).
fn quantile(sorted: &[u64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1] as f64
}

pub(super) fn request_metrics(root: &Path, args: RequestMetricsArgs) -> Result<()> {
    let bin = root.join("target").join("release").join("kraftd");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    crate::run(root, &cargo, &["build", "--release", "--bin", "kraftd"])?;
    let dir = std::env::temp_dir().join(format!("kraftd-bench-rm-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    println!("bench directory: {}", dir.display());
    println!("load average before the bench: {}", loadavg());
    let mut sides = Vec::new();
    for (name, config) in [
        ("metrics on", ""),
        ("metrics off", "request.metrics.enable=false\n"),
    ] {
        let sub = dir.join(name.replace(' ', "-"));
        std::fs::create_dir_all(&sub)?;
        println!("==> starting the cluster with {name}");
        let cluster = Cluster::start_kraftd(&bin, &sub, config).with_context(|| {
            format!(
                "starting the cluster with {name}; logs in {}",
                sub.display()
            )
        })?;
        sides.push(Side {
            name,
            cluster,
            leader: None,
            batch: batch()?,
            latencies_ns: Vec::with_capacity(args.requests as usize),
        });
    }
    let outcome = drive(&mut sides, &args);
    for side in &mut sides {
        side.cluster.stop();
    }
    outcome?;
    if !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
    report(&mut sides, &args);
    Ok(())
}

fn drive(sides: &mut [Side], args: &RequestMetricsArgs) -> Result<()> {
    for side in sides.iter_mut() {
        side.prepare()?;
    }
    println!("warming up: {} produces per cluster", args.warmup);
    for _ in 0..args.warmup {
        for side in sides.iter_mut() {
            side.produce()?;
        }
    }
    println!("timing {} produces per cluster, alternating", args.requests);
    let started = Instant::now();
    for i in 0..args.requests {
        // Alternate which cluster goes first, so neither always follows the other.
        let order: [usize; 2] = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        for index in order {
            let side = &mut sides[index];
            let ns = side.produce()?;
            side.latencies_ns.push(ns);
        }
    }
    println!(
        "timed in {:.1} s; load average {}",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
    Ok(())
}

fn report(sides: &mut [Side], args: &RequestMetricsArgs) {
    println!();
    println!(
        "Produce v{PRODUCE_VERSION}, acks=all, RF 3, one {RECORD_BYTES}-byte record per request, \
         one at a time; {} requests per cluster (after {} warm-up), interleaved",
        args.requests, args.warmup
    );
    println!(
        "{:<12} {:>10} {:>10} {:>10} {:>10}",
        "", "p50 µs", "p99 µs", "p99.9 µs", "mean µs"
    );
    let mut rows = Vec::new();
    for side in sides.iter_mut() {
        side.latencies_ns.sort_unstable();
        let v = &side.latencies_ns;
        let mean = v.iter().sum::<u64>() as f64 / v.len().max(1) as f64;
        let row = [
            quantile(v, 0.5) / 1e3,
            quantile(v, 0.99) / 1e3,
            quantile(v, 0.999) / 1e3,
            mean / 1e3,
        ];
        println!(
            "{:<12} {:>10.1} {:>10.1} {:>10.1} {:>10.1}",
            side.name, row[0], row[1], row[2], row[3]
        );
        rows.push(row);
    }
    if let [on, off] = rows.as_slice() {
        let diff: Vec<f64> = on.iter().zip(off).map(|(a, b)| a - b).collect();
        println!(
            "{:<12} {:>+10.1} {:>+10.1} {:>+10.1} {:>+10.1}",
            "on - off", diff[0], diff[1], diff[2], diff[3]
        );
        println!(
            "{:<12} {:>+9.1}% {:>+9.1}% {:>+9.1}% {:>+9.1}%",
            "relative",
            100.0 * diff[0] / off[0],
            100.0 * diff[1] / off[1],
            100.0 * diff[2] / off[2],
            100.0 * diff[3] / off[3]
        );
    }
}
