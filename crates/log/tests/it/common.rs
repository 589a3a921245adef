//! Helpers shared by the tests: building batches the way producers and leaders do.

use bytes::{Bytes, BytesMut};
use kraftd_log::{Log, LogConfig};
use kraftd_protocol::records::{Batches, RecordBatch, RecordBatchBuilder};

/// A producer's batch: `n` records with values `value-<i>` of `value_len` bytes, offsets
/// from 0 (the leader assigns real ones), timestamps from `ts`.
pub fn producer_batch(n: usize, value_len: usize, ts: i64) -> BytesMut {
    let mut b = RecordBatchBuilder::new(0);
    for i in 0..n {
        let mut v = format!("value-{i}").into_bytes();
        v.resize(value_len.max(v.len()), b'x');
        b.append(ts + i as i64, None, Some(Bytes::from(v)), Vec::new())
            .unwrap();
    }
    BytesMut::from(&b.build().unwrap()[..])
}

/// A leader-stamped batch as a follower receives it.
pub fn leader_batch(base: i64, epoch: i32, n: usize, ts: i64) -> Bytes {
    let mut b = RecordBatchBuilder::new(base).partition_leader_epoch(epoch);
    for i in 0..n {
        b.append(
            ts + i as i64,
            None,
            Some(Bytes::from(vec![b'v'; 20])),
            Vec::new(),
        )
        .unwrap();
    }
    b.build().unwrap()
}

/// Every batch of `bytes`, which must be whole and sound.
pub fn batches(bytes: &Bytes) -> Vec<RecordBatch> {
    Batches::new(bytes.clone()).map(|b| b.unwrap()).collect()
}

/// Reads the whole log from its start, batch by batch.
pub fn read_all(log: &Log) -> Vec<RecordBatch> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    while offset < log.log_end_offset() {
        let r = log.read(offset, 1 << 20, i64::MAX).unwrap();
        assert!(!r.bytes.is_empty(), "no progress at {offset}");
        let bs = batches(&r.bytes);
        offset = bs.last().unwrap().next_offset();
        assert_eq!(offset, r.next_offset);
        out.extend(bs);
    }
    out
}

/// A config with tiny segments and dense indexes, so tests roll and index often.
pub fn small_config() -> LogConfig {
    LogConfig {
        segment_bytes: 1024,
        index_interval_bytes: 100,
        retention_ms: -1,
        ..LogConfig::default()
    }
}

/// A scratch directory, on tmpfs when the machine has one: the tests fsync a lot, and
/// what they check is the log's logic, not the disk's latency.
pub fn tempdir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}
