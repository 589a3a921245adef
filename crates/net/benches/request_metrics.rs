//! The request metrics' cost on the transport alone (not a test): two listeners of the real
//! server on loopback, one recording request metrics and one not
//! (`RequestMetrics::new(false)`, what `request.metrics.enable=false` gives), each answering
//! Produce at once with a one-partition response; one client sends Produce requests one at a
//! time to each in turn and times the round trips. The difference is what recording a
//! request costs on the request path without the rest of a broker around it (the
//! cluster-level figure is `cargo xtask bench request-metrics`).
//!
//! `cargo bench -p kraftd-net --bench request_metrics`; `KRAFTD_BENCH_REQUESTS` (per
//! listener, default 50,000) scales it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kraftd_net::{serve, InboundRequest, RequestHandler, RequestMetrics, ServerConfig};
use kraftd_protocol::api_versions::{ApiVersionsTable, ListenerType};
use kraftd_protocol::header::{decode_response, encode_request};
use kraftd_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kraftd_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kraftd_protocol::messages::{ProduceRequest, ProduceResponse, RequestHeader};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody, VersionRange};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

const VERSION: i16 = 9;

/// Answers every Produce at once, marking its phases as the broker does.
struct Answer;

impl RequestHandler for Answer {
    async fn dispatch(&self, request: InboundRequest) -> Option<oneshot::Receiver<ResponseBody>> {
        let (tx, rx) = oneshot::channel();
        request.timer.local_complete();
        request.timer.remote_complete();
        request.timer.response_complete();
        let _ = tx.send(ResponseBody::Produce(ProduceResponse {
            responses: vec![TopicProduceResponse {
                name: "bench".into(),
                partition_responses: vec![PartitionProduceResponse {
                    index: 0,
                    base_offset: 1,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        }));
        Some(rx)
    }
}

async fn listener(metrics: bool) -> TcpStream {
    let socket = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = socket.local_addr().unwrap();
    let mut table = ApiVersionsTable::new(ListenerType::Broker);
    table
        .add(ApiKey::Produce, VersionRange { min: 3, max: 12 })
        .unwrap();
    let config = ServerConfig {
        metrics: Arc::new(RequestMetrics::new(metrics)),
        ..Default::default()
    };
    tokio::spawn(serve(socket, Arc::new(table), config, Arc::new(Answer)));
    let stream = TcpStream::connect(addr).await.unwrap();
    stream.set_nodelay(true).unwrap();
    stream
}

fn frame(correlation_id: i32) -> Vec<u8> {
    let header = RequestHeader {
        request_api_key: ApiKey::Produce.code(),
        request_api_version: VERSION,
        correlation_id,
        client_id: Some("bench".into()),
        ..Default::default()
    };
    let body = RequestBody::Produce(ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: "bench".into(),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(Bytes::from(vec![0u8; 1024])),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let encoded = encode_request(&header, &body).unwrap().into_bytes();
    let mut out = (encoded.len() as i32).to_be_bytes().to_vec();
    out.extend_from_slice(&encoded);
    out
}

/// One request's round trip.
async fn round_trip(stream: &mut TcpStream, request: &[u8]) -> Duration {
    let sent = Instant::now();
    stream.write_all(request).await.unwrap();
    let mut size = [0u8; 4];
    stream.read_exact(&mut size).await.unwrap();
    let mut buf = vec![0u8; i32::from_be_bytes(size) as usize];
    stream.read_exact(&mut buf).await.unwrap();
    let took = sent.elapsed();
    let (_, body) = decode_response(ApiKey::Produce, VERSION, Bytes::from(buf)).unwrap();
    assert!(matches!(body, ResponseBody::Produce(_)));
    took
}

fn quantile(sorted: &[Duration], q: f64) -> f64 {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1].as_secs_f64() * 1e6
}

fn main() {
    let requests: usize = std::env::var("KRAFTD_BENCH_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut on = listener(true).await;
        let mut off = listener(false).await;
        let request = frame(1);
        for _ in 0..2_000 {
            round_trip(&mut on, &request).await;
            round_trip(&mut off, &request).await;
        }
        let (mut with, mut without) = (Vec::new(), Vec::new());
        for i in 0..requests {
            // Alternate which goes first.
            if i % 2 == 0 {
                with.push(round_trip(&mut on, &request).await);
                without.push(round_trip(&mut off, &request).await);
            } else {
                without.push(round_trip(&mut off, &request).await);
                with.push(round_trip(&mut on, &request).await);
            }
        }
        println!(
            "Produce v{VERSION} round trips on loopback, server answering at once, {requests} \
             per listener, interleaved"
        );
        println!(
            "{:<12} {:>9} {:>9} {:>9}",
            "", "p50 µs", "p99 µs", "mean µs"
        );
        let mut rows = Vec::new();
        for (name, v) in [("metrics on", &mut with), ("metrics off", &mut without)] {
            v.sort_unstable();
            let mean = v.iter().map(Duration::as_secs_f64).sum::<f64>() / v.len() as f64 * 1e6;
            let row = [quantile(v, 0.5), quantile(v, 0.99), mean];
            println!("{name:<12} {:>9.1} {:>9.1} {:>9.1}", row[0], row[1], row[2]);
            rows.push(row);
        }
        println!(
            "{:<12} {:>+9.1} {:>+9.1} {:>+9.1}",
            "on - off",
            rows[0][0] - rows[1][0],
            rows[0][1] - rows[1][1],
            rows[0][2] - rows[1][2]
        );
    });
}
