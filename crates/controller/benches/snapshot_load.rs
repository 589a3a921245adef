//! The snapshot-load benchmark of issue 5 (not a test): a metadata image of 1,000,000
//! partitions (10,000 topics × 100 partitions, RF 3, 5 brokers, one log directory per
//! broker) is written as a Kafka-format snapshot, dropped, and loaded back through the one
//! replay path; it prints the load time, the peak heap during the load (a counting global
//! allocator in this binary), the snapshot's size, the loaded image's heap per partition and
//! the time and heap of the indexes a controller adds to it.
//! The aim: 1M partitions load in under 5 s and under 1 GiB.
//!
//! `cargo bench -p kraftd-controller --bench snapshot_load`; `KRAFTD_BENCH_TOPICS` (default
//! 10,000) and `KRAFTD_BENCH_PARTITIONS` (per topic, default 100) scale it, and
//! `KRAFTD_BENCH_SNAPSHOT_OUT=<file>` keeps the snapshot for Kafka's own tools (name it
//! `<end offset, 20 digits>-<epoch 12, 10 digits>.checkpoint` for `kafka-metadata-shell
//! --snapshot` or `kafka-dump-log --cluster-metadata-decoder`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use kraftd_controller::snapshot::{load_image_snapshot, write_image_snapshot};
use kraftd_controller::MetadataImage;
use kraftd_protocol::metadata::register_broker_record::BrokerEndpoint;
use kraftd_protocol::metadata::{
    FeatureLevelRecord, PartitionRecord, RegisterBrokerRecord, TopicRecord, UnfenceBrokerRecord,
};
use kraftd_protocol::{MetadataRecord, Uuid};

/// Counts live heap bytes and remembers the peak since the last reset.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(size: usize) {
    let now = CURRENT.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged to the system allocator.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn current() -> usize {
    CURRENT.load(Ordering::Relaxed)
}

fn reset_peak() -> usize {
    let now = current();
    PEAK.store(now, Ordering::Relaxed);
    now
}

fn peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn mib(bytes: usize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn uuid(kind: u8, n: u64) -> Uuid {
    let mut b = [0u8; 16];
    b[0] = kind;
    b[8..].copy_from_slice(&n.to_be_bytes());
    Uuid(b)
}

const BROKERS: i32 = 5;

/// The records of the cluster: metadata.version, five unfenced brokers with one log
/// directory each, and `topics` topics of `partitions` partitions, RF 3, spread round-robin.
fn cluster_records(topics: usize, partitions: usize) -> Vec<MetadataRecord> {
    let mut records = vec![MetadataRecord::FeatureLevel(FeatureLevelRecord {
        name: "metadata.version".into(),
        feature_level: 27,
        ..Default::default()
    })];
    for b in 1..=BROKERS {
        records.push(MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: b,
            broker_epoch: 100 + i64::from(b),
            incarnation_id: uuid(1, b as u64),
            end_points: vec![BrokerEndpoint {
                name: "PLAINTEXT".into(),
                host: format!("broker-{b}.example.com"),
                port: 9092,
                security_protocol: 0,
                ..Default::default()
            }],
            rack: Some(format!("rack-{}", b % 3)),
            fenced: true,
            log_dirs: vec![uuid(2, b as u64)],
            ..Default::default()
        }));
        records.push(MetadataRecord::UnfenceBroker(UnfenceBrokerRecord {
            id: b,
            epoch: 100 + i64::from(b),
            ..Default::default()
        }));
    }
    for t in 0..topics {
        let topic_id = uuid(3, t as u64);
        records.push(MetadataRecord::Topic(TopicRecord {
            name: format!("topic-{t:05}"),
            topic_id,
            ..Default::default()
        }));
        for p in 0..partitions {
            let first = (t + p) % BROKERS as usize;
            let replicas: Vec<i32> = (0..3)
                .map(|i| ((first + i) % BROKERS as usize) as i32 + 1)
                .collect();
            records.push(MetadataRecord::Partition(PartitionRecord {
                partition_id: p as i32,
                topic_id,
                isr: replicas.clone(),
                leader: replicas[0],
                directories: replicas.iter().map(|b| uuid(2, *b as u64)).collect(),
                replicas,
                leader_epoch: 3,
                partition_epoch: 5,
                ..Default::default()
            }));
        }
    }
    records
}

fn main() {
    let topics = env("KRAFTD_BENCH_TOPICS", 10_000);
    let partitions_per_topic = env("KRAFTD_BENCH_PARTITIONS", 100);
    let partitions = topics * partitions_per_topic;
    println!(
        "snapshot load: {topics} topics x {partitions_per_topic} partitions = {partitions} \
         partitions, RF 3, {BROKERS} brokers"
    );

    let t = Instant::now();
    let records = cluster_records(topics, partitions_per_topic);
    let record_count = records.len();
    let image = MetadataImage::empty()
        .replay_all(&records)
        .expect("cluster records replay");
    drop(records);
    println!(
        "  build image by replaying {record_count} records: {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let before_write = reset_peak();
    let t = Instant::now();
    let snapshot = write_image_snapshot(&image, 12, 1_700_000_000_000).expect("snapshot");
    let write_s = t.elapsed().as_secs_f64();
    let write_peak_above = peak() - before_write;
    drop(image);
    if let Ok(path) = std::env::var("KRAFTD_BENCH_SNAPSHOT_OUT") {
        std::fs::write(&path, &snapshot).expect("write the snapshot file");
        println!("  snapshot written to {path}");
    }
    println!(
        "  write snapshot: {write_s:.2} s, {:.1} MiB ({:.1} bytes/partition), peak heap {:.1} MiB \
         above the image",
        mib(snapshot.len()),
        snapshot.len() as f64 / partitions as f64,
        mib(write_peak_above)
    );

    // Only the snapshot bytes are live now.
    let before = reset_peak();
    let t = Instant::now();
    let loaded = load_image_snapshot(snapshot.clone()).expect("snapshot loads");
    let load_s = t.elapsed().as_secs_f64();
    let peak_above = peak() - before;
    let retained = current() - before;
    println!(
        "  load snapshot: {load_s:.2} s ({:.0} partitions/s)",
        partitions as f64 / load_s
    );
    println!(
        "  peak heap during load: {:.1} MiB above the {:.1} MiB already held (snapshot bytes), \
         {:.1} MiB in all",
        mib(peak_above),
        mib(before),
        mib(peak())
    );
    println!(
        "  loaded image: {:.1} MiB of heap, {:.0} bytes/partition",
        mib(retained),
        retained as f64 / partitions as f64
    );

    // The loaded image writes the same snapshot: it is the image that was written.
    let again = write_image_snapshot(&loaded, 12, 1_700_000_000_000).expect("snapshot");
    assert!(
        again == snapshot,
        "the loaded image differs from the written one"
    );
    let topics_loaded = loaded.topics.len();
    assert_eq!(topics_loaded, topics);

    // What a controller adds when it takes the loaded image: its partition indexes, by one
    // scan (a broker's image has none).
    let before = current();
    let t = Instant::now();
    let indexed = loaded.with_controller_indexes();
    let index_s = t.elapsed().as_secs_f64();
    println!(
        "  controller indexes of the loaded image: {index_s:.2} s, {:.1} MiB of heap, {:.1} bytes/partition",
        mib(current().saturating_sub(before)),
        current().saturating_sub(before) as f64 / partitions as f64
    );
    drop(indexed);

    let aim_ok = load_s < 5.0 && peak() < 1 << 30;
    println!(
        "  aim (1M partitions: < 5 s, < 1 GiB): {}",
        if aim_ok { "met" } else { "NOT met" }
    );
}
