//! Codec benchmarks (not tests): `cargo bench -p kraftd-protocol`.
//!
//! - Decoding a ProduceRequest and encoding a FetchResponse that each carry 1 MiB of records,
//!   next to a plain memcpy of the same 1 MiB in the same run: records are sliced, never
//!   copied, so both should cost a small fraction of the memcpy. The benchmark also checks
//!   the pointers before timing anything, so a regression to copying fails loudly.
//! - Decoding and encoding a MetadataResponse with 1000 partitions.
//! - What a leader's produce validation costs on a ~1 MiB uncompressed batch (1 KiB and
//!   100-byte records): the CRC it always checks, beside reading every record for its
//!   timestamp (the broker's LogValidator on a CreateTime topic) and the copy the append
//!   makes anyway.

use bytes::Bytes;
use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kraftd_protocol::messages::{fetch_response, metadata_response, produce_request};
use kraftd_protocol::messages::{FetchResponse, MetadataResponse, ProduceRequest};
use kraftd_protocol::records::{RecordBatch, RecordBatchBuilder};
use kraftd_protocol::{Encoder, Message};

const RECORDS_BYTES: usize = 1024 * 1024;

fn records() -> Bytes {
    Bytes::from((0..RECORDS_BYTES).map(|i| i as u8).collect::<Vec<u8>>())
}

fn produce_request(records: Bytes) -> ProduceRequest {
    ProduceRequest {
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![produce_request::TopicProduceData {
            name: "bench".into(),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn fetch_response(records: Bytes) -> FetchResponse {
    FetchResponse {
        responses: vec![fetch_response::FetchableTopicResponse {
            topic: "bench".into(),
            partitions: vec![fetch_response::PartitionData {
                partition_index: 0,
                high_watermark: 1000,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn metadata_response(partitions: i32) -> MetadataResponse {
    let brokers = (0..3)
        .map(|id| metadata_response::MetadataResponseBroker {
            node_id: id,
            host: format!("broker-{id}.example"),
            port: 9092,
            ..Default::default()
        })
        .collect();
    let topics = (0..partitions / 10)
        .map(|t| metadata_response::MetadataResponseTopic {
            name: Some(format!("topic-{t}")),
            partitions: (0..10)
                .map(|p| metadata_response::MetadataResponsePartition {
                    partition_index: p,
                    leader_id: p % 3,
                    leader_epoch: 5,
                    replica_nodes: vec![0, 1, 2],
                    isr_nodes: vec![0, 1, 2],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    MetadataResponse {
        brokers,
        topics,
        cluster_id: Some("kraftd-bench".into()),
        controller_id: 0,
        ..Default::default()
    }
}

/// Proves, before timing, that records are neither copied in nor out.
fn assert_zero_copy(records: &Bytes) {
    let frame = produce_request(records.clone()).to_bytes(9).unwrap();
    let decoded = ProduceRequest::decode(&mut frame.clone(), 9).unwrap();
    let got = decoded.topic_data[0].partition_data[0]
        .records
        .as_ref()
        .unwrap();
    let inside = frame.as_ptr_range().contains(&got.as_ptr());
    assert!(inside, "decoded records were copied out of the frame");

    let mut e = Encoder::new();
    fetch_response(records.clone()).encode(&mut e, 16).unwrap();
    let chunks = e.into_chunks();
    assert!(
        chunks
            .iter()
            .any(|c| c.as_ptr() == records.as_ptr() && c.len() == records.len()),
        "encoded records were copied into the response"
    );
}

fn records_benches(c: &mut Criterion) {
    let records = records();
    assert_zero_copy(&records);
    let mut group = c.benchmark_group("1MiB-records");
    group.throughput(Throughput::Bytes(RECORDS_BYTES as u64));

    let mut dst = vec![0u8; RECORDS_BYTES];
    group.bench_function("memcpy-baseline", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&records));
            black_box(&dst);
        })
    });

    let frame = produce_request(records.clone()).to_bytes(9).unwrap();
    group.bench_function("decode-ProduceRequest-v9", |b| {
        b.iter(|| black_box(ProduceRequest::decode(&mut frame.clone(), 9).unwrap()))
    });

    let response = fetch_response(records.clone());
    group.bench_function("encode-FetchResponse-v16", |b| {
        b.iter(|| {
            let mut e = Encoder::with_capacity(256);
            response.encode(&mut e, 16).unwrap();
            black_box(e.into_chunks())
        })
    });
    group.finish();
}

fn metadata_benches(c: &mut Criterion) {
    let mut group = c.benchmark_group("MetadataResponse");
    for partitions in [100, 1000] {
        let response = metadata_response(partitions);
        let bytes = response.to_bytes(12).unwrap();
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("encode-v12", partitions),
            &response,
            |b, r| {
                b.iter(|| {
                    let mut e = Encoder::with_capacity(bytes.len());
                    r.encode(&mut e, 12).unwrap();
                    black_box(e.into_bytes())
                })
            },
        );
        group.bench_with_input(
            BenchmarkId::new("decode-v12", partitions),
            &bytes,
            |b, bytes| {
                b.iter(|| black_box(MetadataResponse::decode(&mut bytes.clone(), 12).unwrap()))
            },
        );
    }
    group.finish();
}

/// A client's uncompressed batch of about 1 MiB of `record_size`-byte values.
fn client_batch(record_size: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new(0).producer(1, 0, 0);
    let value = Bytes::from(vec![7u8; record_size]);
    for i in 0..RECORDS_BYTES / (record_size + 20) {
        b.append(
            1_700_000_000_000 + i as i64,
            None,
            Some(value.clone()),
            Vec::new(),
        )
        .unwrap();
    }
    b.build().unwrap()
}

fn validation_benches(c: &mut Criterion) {
    for record_size in [1024, 100] {
        let bytes = client_batch(record_size);
        let batch = RecordBatch::parse(bytes.clone()).unwrap();
        let mut group = c.benchmark_group(format!("validate-1MiB-batch-{record_size}B-records"));
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_function("copy (the append's)", |b| {
            b.iter(|| black_box(bytes::BytesMut::from(&black_box(&bytes)[..])))
        });
        group.bench_function("crc", |b| {
            b.iter(|| black_box(&batch).validate_crc().unwrap())
        });
        group.bench_function("every-record-timestamp", |b| {
            b.iter(|| {
                let batch = black_box(&batch);
                let mut max = i64::MIN;
                for r in batch.records().unwrap() {
                    max = max.max(r.unwrap().timestamp(batch));
                }
                black_box(max)
            })
        });
        group.bench_function("skim-every-record-timestamp", |b| {
            b.iter(|| {
                let batch = black_box(&batch);
                let base = batch.base_timestamp();
                let mut max = i64::MIN;
                for r in batch.skim().unwrap() {
                    max = max.max(base.wrapping_add(r.unwrap().timestamp_delta));
                }
                black_box(max)
            })
        });
        group.finish();
    }
}

criterion_group!(
    benches,
    records_benches,
    metadata_benches,
    validation_benches
);
criterion_main!(benches);
