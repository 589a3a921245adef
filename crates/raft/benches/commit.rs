//! The Raft commit benchmark of issue 4 (not a test): a 3-voter quorum of real drivers on
//! loopback TCP with real log directories and fsync on (`LogConfig::metadata_log`),
//! measuring commit latency p50/p99 for single-record proposals and throughput (records/s of
//! 100-byte records) with batching, printed next to this machine's fsync latency and
//! loopback round trip measured in the same run, so the figures can be judged against the
//! hardware: the aim is p50 ≤ 2 × (fsync + round trip) and > 100,000 records/s.
//!
//! `cargo bench -p kraftd-raft --bench commit`; `KRAFTD_BENCH_COMMITS` (single-record
//! commits, default 300) and `KRAFTD_BENCH_RECORDS` (records for throughput, default
//! 200,000) scale it.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_raft::driver::{DriverConfig, QuorumConfig, RaftDriver, RaftHandle, VoterEndpoint};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const RECORD_BYTES: usize = 100;
const RECORDS_PER_PROPOSAL: usize = 1000;
/// Proposals in flight at once during the throughput run.
const PIPELINE_DEPTH: usize = 32;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// 100-byte writes each followed by fdatasync, in a file on the same file system as the logs.
fn fsync_latency(dir: &std::path::Path, n: usize) -> Vec<Duration> {
    let mut f = std::fs::File::create(dir.join("fsync-probe")).expect("probe file");
    let buf = [7u8; RECORD_BYTES];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        f.write_all(&buf).expect("write");
        f.sync_data().expect("fdatasync");
        out.push(t.elapsed());
    }
    out.sort();
    out
}

/// A one-record append to a metadata log (`LogConfig::metadata_log`: the append flushes),
/// what each replica pays per commit on this disk.
fn log_append_latency(dir: &std::path::Path, n: usize) -> Vec<Duration> {
    let mut log = kraftd_log::Log::open(
        &dir.join("append-probe"),
        kraftd_log::LogConfig::metadata_log(),
        0,
    )
    .expect("probe log");
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let mut b = kraftd_protocol::records::RecordBatchBuilder::new(0);
        b.append(
            0,
            None,
            Some(Bytes::from(vec![7u8; RECORD_BYTES])),
            Vec::new(),
        )
        .expect("record");
        let batch = bytes::BytesMut::from(&b.build().expect("batch")[..]);
        let t = Instant::now();
        log.append_as_leader(batch, 1, 0).expect("append");
        out.push(t.elapsed());
    }
    out.sort();
    out
}

/// A 100-byte ping-pong over loopback TCP.
async fn loopback_round_trip(n: usize) -> Vec<Duration> {
    let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = l.local_addr().expect("addr");
    let echo = tokio::spawn(async move {
        let (mut s, _) = l.accept().await.expect("accept");
        s.set_nodelay(true).expect("nodelay");
        let mut buf = [0u8; RECORD_BYTES];
        while s.read_exact(&mut buf).await.is_ok() {
            if s.write_all(&buf).await.is_err() {
                break;
            }
        }
    });
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.set_nodelay(true).expect("nodelay");
    let mut buf = [1u8; RECORD_BYTES];
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        s.write_all(&buf).await.expect("write");
        s.read_exact(&mut buf).await.expect("read");
        out.push(t.elapsed());
    }
    drop(s);
    let _ = echo.await;
    out.sort();
    out
}

async fn quorum(root: &std::path::Path) -> Vec<RaftDriver> {
    let mut listeners = BTreeMap::new();
    let mut voters = BTreeMap::new();
    for id in 1..=3 {
        let l = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = l.local_addr().expect("addr").port();
        voters.insert(
            id,
            VoterEndpoint {
                id,
                host: "127.0.0.1".into(),
                port,
            },
        );
        listeners.insert(id, l);
    }
    let mut drivers = Vec::new();
    for (id, l) in listeners {
        let mut c = DriverConfig::new(
            id,
            QuorumConfig::new(
                "kraftd-bench-AAAAAAAAAAAA",
                voters.clone(),
                root.join(format!("node-{id}")),
            ),
        );
        // No linger: each proposal is flushed at once, so latency is the protocol's own.
        c.quorum.raft.append_linger_ms = 0;
        drivers.push(RaftDriver::start(c, l).await.expect("start"));
    }
    drivers
}

async fn leader(drivers: &[RaftDriver]) -> RaftHandle {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        for d in drivers {
            let h = d.handle();
            if h.metrics().borrow().current_state == "leader"
                && h.metrics().borrow().high_watermark > 0
            {
                return h;
            }
        }
        assert!(tokio::time::Instant::now() < deadline, "no leader elected");
        let mut rx = drivers[0].handle().metrics();
        let _ = tokio::time::timeout(Duration::from_millis(20), rx.changed()).await;
    }
}

async fn wait_committed(h: &RaftHandle, last: i64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    assert!(
        h.wait_for(deadline, |m| m.high_watermark > last).await,
        "offset {last} never committed"
    );
}

fn main() {
    let commits = env("KRAFTD_BENCH_COMMITS", 300);
    let records = env("KRAFTD_BENCH_RECORDS", 200_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(8)
        .enable_all()
        .build()
        .expect("runtime");
    let root = tempfile::tempdir().expect("temp dir");
    rt.block_on(async {
        let fsync = fsync_latency(root.path(), 200);
        let append = log_append_latency(root.path(), 200);
        let rtt = loopback_round_trip(2000).await;
        let drivers = quorum(root.path()).await;
        let h = leader(&drivers).await;

        // Single-record commits, one at a time.
        let value = Bytes::from(vec![b'v'; RECORD_BYTES]);
        let mut latencies = Vec::with_capacity(commits);
        for _ in 0..commits {
            let t = Instant::now();
            h.propose_committed(vec![value.clone()])
                .await
                .expect("propose");
            latencies.push(t.elapsed());
        }
        latencies.sort();
        let inside = h.metrics().borrow().clone();

        // Throughput: batches of RECORDS_PER_PROPOSAL, PIPELINE_DEPTH proposals in flight.
        let batch: Vec<Bytes> = (0..RECORDS_PER_PROPOSAL).map(|_| value.clone()).collect();
        let proposals = records.div_ceil(RECORDS_PER_PROPOSAL);
        let t = Instant::now();
        let mut in_flight = std::collections::VecDeque::new();
        for _ in 0..proposals {
            if in_flight.len() >= PIPELINE_DEPTH {
                let last = in_flight.pop_front().expect("in flight");
                wait_committed(&h, last).await;
            }
            let (_, last) = h.propose(batch.clone()).await.expect("propose");
            in_flight.push_back(last);
        }
        if let Some(last) = in_flight.pop_back() {
            wait_committed(&h, last).await;
        }
        let elapsed = t.elapsed();
        let throughput = (proposals * RECORDS_PER_PROPOSAL) as f64 / elapsed.as_secs_f64();

        let (f50, r50) = (percentile(&fsync, 0.5), percentile(&rtt, 0.5));
        println!("kraftd-raft commit benchmark (3 voters, loopback TCP, fsync on)");
        println!(
            "  fsync (100 B + fdatasync):     p50 {:.3} ms  p99 {:.3} ms",
            ms(f50),
            ms(percentile(&fsync, 0.99))
        );
        println!(
            "  log append + flush (1 record): p50 {:.3} ms  p99 {:.3} ms",
            ms(percentile(&append, 0.5)),
            ms(percentile(&append, 0.99))
        );
        println!(
            "  loopback round trip (100 B):   p50 {:.3} ms  p99 {:.3} ms",
            ms(r50),
            ms(percentile(&rtt, 0.99))
        );
        println!(
            "  commit latency, 1 record:      p50 {:.3} ms  p99 {:.3} ms  ({} commits; aim p50 <= {:.3} ms)",
            ms(percentile(&latencies, 0.5)),
            ms(percentile(&latencies, 0.99)),
            commits,
            2.0 * ms(f50 + r50)
        );
        println!(
            "  commit latency inside the leader's driver (raft-metrics commit-latency): avg {:.3} ms  max {:.3} ms",
            inside.commit_latency_avg_ms, inside.commit_latency_max_ms
        );
        println!(
            "  throughput, batches of {RECORDS_PER_PROPOSAL}:    {:.0} records/s of {RECORD_BYTES} B ({} records in {:.2} s; aim > 100000)",
            throughput,
            proposals * RECORDS_PER_PROPOSAL,
            elapsed.as_secs_f64()
        );
        for d in drivers {
            let _ = d.shutdown().await;
        }
    });
}
