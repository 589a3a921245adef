//! The histogram's buckets and quantiles, the error counting, the phase arithmetic and the
//! Prometheus text of the request metrics.

use std::time::{Duration, Instant};

use kraftd_protocol::messages::metadata_response::MetadataResponseTopic;
use kraftd_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kraftd_protocol::messages::{MetadataResponse, ProduceResponse};
use kraftd_protocol::{ApiKey, ErrorCode, ResponseBody};

use super::histogram::{bucket_bounds, bucket_of, AtomicHistogram, Snapshot, BUCKETS};
use super::render::idle_ratio;
use super::timer::Marked;
use super::*;

#[test]
fn every_value_falls_in_its_bucket_and_buckets_tile_the_range() {
    let mut previous_high = None;
    for index in 0..BUCKETS {
        let (low, high) = bucket_bounds(index);
        assert!(low <= high, "bucket {index}");
        if let Some(p) = previous_high {
            assert_eq!(
                low,
                p + 1,
                "bucket {index} starts where {} ended",
                index - 1
            );
        }
        assert_eq!(bucket_of(low), index);
        assert_eq!(bucket_of(high), index);
        previous_high = Some(high);
    }
    assert_eq!(previous_high, Some(u64::MAX));
    for v in [
        0,
        1,
        7,
        8,
        9,
        15,
        16,
        17,
        1000,
        123_456,
        1 << 39,
        (1 << 40) - 1,
        1 << 40,
        u64::MAX,
    ] {
        let (low, high) = bucket_bounds(bucket_of(v));
        assert!(low <= v && v <= high, "{v} in [{low}, {high}]");
    }
}

#[test]
fn quantiles_are_within_a_sixteenth_of_the_true_value() {
    let h = AtomicHistogram::default();
    // 1..=10000 µs: the true q-quantile is q × 10000.
    for v in 1..=10_000u64 {
        h.record(v);
    }
    let s = h.snapshot();
    assert_eq!(s.count(), 10_000);
    assert_eq!(s.sum, 10_000 * 10_001 / 2);
    for q in [0.5, 0.75, 0.95, 0.99, 0.999] {
        let truth = q * 10_000.0;
        let got = s.quantile(q).expect("values") as f64;
        assert!(
            (got - truth).abs() <= truth / 16.0,
            "q{q}: {got} vs {truth}"
        );
    }
    // Small values are exact.
    let h = AtomicHistogram::default();
    for v in [3, 3, 3, 5] {
        h.record(v);
    }
    assert_eq!(h.snapshot().quantile(0.5), Some(3));
    assert_eq!(h.snapshot().quantile(1.0), Some(5));
    assert_eq!(Snapshot::default().quantile(0.5), None);
}

#[test]
fn a_window_holds_only_what_was_recorded_since_its_start() {
    let h = AtomicHistogram::default();
    for _ in 0..100 {
        h.record(1_000_000);
    }
    let base = h.snapshot();
    for _ in 0..10 {
        h.record(2);
    }
    let window = h.snapshot().since(&base);
    assert_eq!(window.count(), 10);
    assert_eq!(window.sum, 20);
    assert_eq!(window.quantile(0.99), Some(2));
}

fn partition(index: i32, error: ErrorCode) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        error_code: error.code(),
        ..Default::default()
    }
}

fn error_counts(m: &RequestMetrics, api: ApiKey) -> Vec<(i16, u64)> {
    let slot = m.apis[api.code() as usize].get().expect("counted");
    (-1..=MAX_ERROR_CODE)
        .filter_map(|c| {
            let n = slot.errors[(c + 1) as usize].load(Ordering::Relaxed);
            (n > 0).then_some((c, n))
        })
        .collect()
}

#[test]
fn every_error_code_of_a_response_is_counted_none_included() {
    let m = RequestMetrics::new(true);
    let produce = ProduceResponse {
        responses: vec![TopicProduceResponse {
            name: "t".into(),
            partition_responses: vec![
                partition(0, ErrorCode::None),
                partition(1, ErrorCode::NotLeaderOrFollower),
                partition(2, ErrorCode::None),
                partition(3, ErrorCode::None),
            ],
            ..Default::default()
        }],
        ..Default::default()
    };
    m.count_errors(ApiKey::Produce, 9, &ResponseBody::Produce(produce));
    assert_eq!(
        error_counts(&m, ApiKey::Produce),
        vec![(0, 3), (ErrorCode::NotLeaderOrFollower.code(), 1)]
    );

    // Metadata's top-level error code exists from v13: counted there, not before.
    let metadata = MetadataResponse {
        topics: vec![MetadataResponseTopic {
            name: Some("missing".into()),
            error_code: ErrorCode::UnknownTopicOrPartition.code(),
            ..Default::default()
        }],
        ..Default::default()
    };
    m.count_errors(
        ApiKey::Metadata,
        12,
        &ResponseBody::Metadata(metadata.clone()),
    );
    assert_eq!(error_counts(&m, ApiKey::Metadata), vec![(3, 1)]);
    m.count_errors(ApiKey::Metadata, 13, &ResponseBody::Metadata(metadata));
    assert_eq!(error_counts(&m, ApiKey::Metadata), vec![(0, 1), (3, 2)]);

    // A code Kafka does not define reads as UNKNOWN_SERVER_ERROR, beside a real one.
    let odd = ProduceResponse {
        responses: vec![TopicProduceResponse {
            partition_responses: vec![
                PartitionProduceResponse {
                    error_code: 999,
                    ..Default::default()
                },
                partition(1, ErrorCode::UnknownServerError),
            ],
            ..Default::default()
        }],
        ..Default::default()
    };
    m.count_errors(ApiKey::Produce, 9, &ResponseBody::Produce(odd));
    let mut out = String::new();
    m.write_prometheus(1, &mut out);
    assert!(out.contains(
        "kafka_network_RequestMetrics_ErrorsPerSec_total{node=\"1\",request=\"Produce\",error=\"UNKNOWN_SERVER_ERROR\"} 2"
    ), "{out}");
    assert!(out.contains(
        "kafka_network_RequestMetrics_ErrorsPerSec_total{node=\"1\",request=\"Produce\",error=\"NOT_LEADER_OR_FOLLOWER\"} 1"
    ));
    assert!(out.contains(
        "kafka_network_RequestMetrics_ErrorsPerSec_total{node=\"1\",request=\"Metadata\",error=\"UNKNOWN_TOPIC_OR_PARTITION\"} 2"
    ));
}

const MS: u64 = 1_000_000;

fn at(start: Instant, ms: u64) -> Instant {
    start + Duration::from_millis(ms)
}

#[test]
fn unmarked_phases_get_kafkas_defaults() {
    let start = Instant::now();
    // Called at 1 ms, returned at 3 ms, response taken at 10 ms, written at 12 ms.
    let p = phases(
        start,
        Marked::default(),
        at(start, 1),
        at(start, 3),
        at(start, 10),
        at(start, 12),
    );
    assert_eq!(p[Phase::RequestQueueTime as usize], MS);
    assert_eq!(p[Phase::LocalTime as usize], 2 * MS);
    // The rest of the wait is remote, as in Kafka when handle() returns before the response.
    assert_eq!(p[Phase::RemoteTime as usize], 7 * MS);
    assert_eq!(p[Phase::ThrottleTime as usize], 0);
    assert_eq!(p[Phase::ResponseQueueTime as usize], 0);
    assert_eq!(p[Phase::ResponseSendTime as usize], 2 * MS);
    assert_eq!(p[Phase::TotalTime as usize], 12 * MS);
}

#[test]
fn marked_phases_split_the_total() {
    let start = Instant::now();
    let marked = Marked {
        dequeued: Some(2 * MS),
        local: Some(5 * MS),
        remote: Some(20 * MS),
        complete: Some(26 * MS),
    };
    let p = phases(
        start,
        marked,
        at(start, 1),
        at(start, 1),
        at(start, 30),
        at(start, 31),
    );
    assert_eq!(p[Phase::RequestQueueTime as usize], 2 * MS);
    assert_eq!(p[Phase::LocalTime as usize], 3 * MS);
    assert_eq!(p[Phase::RemoteTime as usize], 15 * MS);
    assert_eq!(p[Phase::ThrottleTime as usize], 6 * MS);
    assert_eq!(p[Phase::ResponseQueueTime as usize], 4 * MS);
    assert_eq!(p[Phase::ResponseSendTime as usize], MS);
    assert_eq!(p[Phase::TotalTime as usize], 31 * MS);
    // A handler that marked its own dequeue but not its local end: local until remote.
    let marked = Marked {
        dequeued: Some(2 * MS),
        ..Default::default()
    };
    let p = phases(
        start,
        marked,
        at(start, 1),
        at(start, 1),
        at(start, 9),
        at(start, 9),
    );
    assert_eq!(p[Phase::LocalTime as usize], 7 * MS);
    assert_eq!(p[Phase::RemoteTime as usize], 0);
    // Out-of-order marks never make a phase negative, and the phases still add up.
    let marked = Marked {
        dequeued: Some(5 * MS),
        local: Some(3 * MS),
        remote: None,
        complete: Some(4 * MS),
    };
    let p = phases(
        start,
        marked,
        at(start, 1),
        at(start, 1),
        at(start, 6),
        at(start, 7),
    );
    let parts: u64 = p[1..=6].iter().sum();
    assert_eq!(parts, p[Phase::TotalTime as usize]);
}

#[test]
fn finished_requests_show_as_counts_versions_and_summaries() {
    let m = RequestMetrics::new(true);
    let start = Instant::now();
    for (api, body_follower) in [
        (ApiKey::Produce, None),
        (ApiKey::Fetch, Some(false)),
        (ApiKey::Fetch, Some(true)),
    ] {
        let request = InFlight {
            timer: m.start(start),
            api,
            version: if api == ApiKey::Produce { 9 } else { 17 },
            fetch_from_follower: body_follower,
            request_bytes: 100,
            dispatched: start,
            returned: start,
            shard: 3,
        };
        m.finish(&request, at(start, 4), at(start, 5), Some(64));
    }
    assert_eq!(m.requests(ApiKey::Produce, 9), 1);
    assert_eq!(m.requests(ApiKey::Fetch, 17), 2);
    let mut out = String::new();
    m.write_prometheus(7, &mut out);
    for line in [
        "kafka_network_RequestMetrics_RequestsPerSec_total{node=\"7\",request=\"Produce\",version=\"9\"} 1",
        "kafka_network_RequestMetrics_RequestsPerSec_total{node=\"7\",request=\"Fetch\",version=\"17\"} 2",
        "kafka_network_RequestMetrics_RequestsPerSec_total{node=\"7\",request=\"FetchConsumer\",version=\"17\"} 1",
        "kafka_network_RequestMetrics_RequestsPerSec_total{node=\"7\",request=\"FetchFollower\",version=\"17\"} 1",
        "kafka_network_RequestMetrics_TotalTimeMs_count{node=\"7\",request=\"Produce\"} 1",
        "kafka_network_RequestMetrics_TotalTimeMs_sum{node=\"7\",request=\"Produce\"} 5",
        "kafka_network_RequestMetrics_RequestBytes_sum{node=\"7\",request=\"Fetch\"} 200",
        // 64 bytes: the middle of its bucket, 64..=71.
        "kafka_network_RequestMetrics_ResponseBytes{node=\"7\",request=\"Produce\",quantile=\"0.99\"} 67",
        "# TYPE kafka_network_RequestMetrics_TotalTimeMs summary",
    ] {
        assert!(out.contains(line), "missing {line} in\n{out}");
    }
    // 5 ms lands in a bucket whose middle is within 1/16 of it.
    let p99 = out
        .lines()
        .find(|l| l.starts_with("kafka_network_RequestMetrics_TotalTimeMs{node=\"7\",request=\"Produce\",quantile=\"0.99\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .expect("a p99");
    assert!((p99 - 5.0).abs() <= 5.0 / 16.0, "{p99}");
}

#[test]
fn disabled_metrics_record_nothing_but_connections() {
    let m = RequestMetrics::new(false);
    let timer = m.start(Instant::now());
    assert!(timer.marks().is_none());
    timer.local_complete(); // a no-op
    let listener = m.listener("PLAINTEXT");
    let guard = listener.opened();
    let mut out = String::new();
    m.write_prometheus(1, &mut out);
    assert!(!out.contains("RequestMetrics"), "{out}");
    assert!(out.contains(
        "kafka_server_socket_server_metrics_connection_count{node=\"1\",listener=\"PLAINTEXT\"} 1"
    ));
    drop(guard);
    assert_eq!(listener.connection_count(), 0);
    let mut out = String::new();
    m.write_prometheus(1, &mut out);
    assert!(out.contains(
        "kafka_server_socket_server_metrics_connection_close_total{node=\"1\",listener=\"PLAINTEXT\"} 1"
    ));
    assert!(Arc::ptr_eq(&listener, &m.listener("PLAINTEXT")));
}

#[test]
fn idle_is_the_share_of_the_pool_left_free() {
    let second = Duration::from_secs(1);
    assert_eq!(idle_ratio(0, second, 2), 1.0);
    assert_eq!(idle_ratio(500_000_000, second, 2), 0.75);
    assert_eq!(idle_ratio(5_000_000_000, second, 2), 0.0);
    assert_eq!(idle_ratio(10, Duration::ZERO, 2), 1.0);
}

#[tokio::test]
async fn a_mark_deep_inside_reaches_the_tasks_request() {
    let timer = RequestTimer::started(Instant::now());
    timer
        .scope(async {
            tokio::task::yield_now().await;
            mark_local_complete();
        })
        .await;
    assert!(timer.read().local.is_some());
    // Outside any request: nothing to mark, and no panic.
    mark_local_complete();
    // The first mark stays.
    let first = timer.read().local;
    timer.local_complete();
    assert_eq!(timer.read().local, first);
}
