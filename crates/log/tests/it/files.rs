//! The files a scripted sequence leaves on disk: names and formats as Kafka's.

use std::path::Path;

use kraftd_log::{
    take_clean_shutdown_marker, write_clean_shutdown_marker, Log, LogConfig, SnapshotId,
};
use kraftd_protocol::records::{Batches, RecordBatch};

use crate::common::*;

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

fn be_u32(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().unwrap())
}

/// Checks a segment's `.index` and `.timeindex` against its `.log`, in Kafka's layout.
fn check_indexes(dir: &Path, base: i64) {
    let log = bytes::Bytes::from(std::fs::read(dir.join(format!("{base:020}.log"))).unwrap());
    let batches: Vec<RecordBatch> = Batches::new(log).map(|b| b.unwrap()).collect();
    let index = std::fs::read(dir.join(format!("{base:020}.index"))).unwrap();
    assert_eq!(index.len() % 8, 0);
    for e in index.chunks(8) {
        let (rel, pos) = (be_u32(&e[..4]), be_u32(&e[4..]));
        let b = batches
            .iter()
            .find(|b| b.position() == pos as usize)
            .expect("index entry points at a batch start");
        assert_eq!(
            b.last_offset(),
            base + i64::from(rel),
            "entries name the batch's last offset"
        );
    }
    let time = std::fs::read(dir.join(format!("{base:020}.timeindex"))).unwrap();
    assert_eq!(time.len() % 12, 0);
    let mut prev = i64::MIN;
    for e in time.chunks(12) {
        let ts = i64::from_be_bytes(e[..8].try_into().unwrap());
        let offset = base + i64::from(be_u32(&e[8..]));
        assert!(ts > prev);
        prev = ts;
        let b = batches.iter().find(|b| b.last_offset() == offset).unwrap();
        assert_eq!(b.max_timestamp(), ts);
    }
}

#[test]
fn scripted_sequence_leaves_kafkas_files() {
    let dir = tempdir();
    let config = LogConfig {
        segment_bytes: 600,
        index_interval_bytes: 150,
        ..LogConfig::default()
    };
    let mut log = Log::open(dir.path(), config.clone(), 0).unwrap();
    for i in 0..12 {
        log.append_as_leader(producer_batch(2, 30, 1000 + i), (i / 4) as i32 * 2, 0)
            .unwrap();
    }
    // 12 batches of 2 records, 3 epochs (0, 2, 4) starting at 0, 8, 16.
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 3, "{bases:?}");
    let w = log
        .create_snapshot(SnapshotId {
            end_offset: 10,
            epoch: 2,
        })
        .unwrap();
    log.commit_snapshot(w).unwrap();
    log.truncate_to(22).unwrap();
    log.close().unwrap();
    write_clean_shutdown_marker(dir.path(), 17).unwrap();

    let mut expected: Vec<String> = Vec::new();
    for b in &bases {
        for suffix in ["index", "log", "timeindex"] {
            expected.push(format!("{b:020}.{suffix}"));
        }
    }
    expected.push(".kafka_cleanshutdown".into());
    expected.push("00000000000000000010-0000000002.checkpoint".into());
    expected.push("leader-epoch-checkpoint".into());
    expected.sort();
    assert_eq!(names(dir.path()), expected);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("leader-epoch-checkpoint")).unwrap(),
        "0\n3\n0 0\n2 8\n4 16\n"
    );
    for &b in &bases {
        check_indexes(dir.path(), b);
    }
    let segs: u64 = bases
        .iter()
        .map(|b| {
            std::fs::metadata(dir.path().join(format!("{b:020}.log")))
                .unwrap()
                .len()
        })
        .sum();
    assert_eq!(segs as usize, 11 * producer_batch(2, 30, 0).len());

    assert_eq!(take_clean_shutdown_marker(dir.path()).unwrap(), Some(17));
    let log = Log::open(dir.path(), config, 0).unwrap();
    assert_eq!(log.log_end_offset(), 22);
    assert_eq!(
        log.stats().index_rebuilds,
        0,
        "sealed indexes are trusted on open"
    );
    assert!(!dir.path().join(".kafka_cleanshutdown").exists());
}
