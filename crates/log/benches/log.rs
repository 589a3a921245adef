//! The log store's benchmark (issue 3): append throughput for 16 KiB batches without a
//! forced flush and with a flush per batch, each next to a plain `write` (+ `fdatasync`) of
//! the same sizes measured in the same run, so the figure that matters is the ratio; and
//! read throughput for a first scan of a freshly opened log and a second (warm) one.
//!
//! `cargo bench -p kraftd-log --bench log`; `KRAFTD_BENCH_MB` sets the volume written
//! without flushes (default 256; a tenth of it with a flush per batch). Runs in the system
//! temp directory, so it measures that disk. "Cold" means a freshly opened log; the OS
//! page cache is not dropped (that needs root).

use std::fs::OpenOptions;
use std::io::Write;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use kraftd_log::{Log, LogConfig};
use kraftd_protocol::records::RecordBatchBuilder;

const BATCH_BYTES: usize = 16 * 1024;

fn batch() -> BytesMut {
    let mut b = RecordBatchBuilder::new(0);
    // One record whose value fills the batch to about 16 KiB.
    b.append(
        0,
        None,
        Some(Bytes::from(vec![7u8; BATCH_BYTES - 80])),
        Vec::new(),
    )
    .expect("record fits");
    BytesMut::from(&b.build().expect("batch builds")[..])
}

fn mbps(bytes: usize, secs: f64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / secs
}

fn plain_write(dir: &std::path::Path, batches: usize, size: usize, sync_each: bool) -> f64 {
    let path = dir.join("plain.bin");
    let mut f = OpenOptions::new()
        .create(true)
        .write(true)
        .truncate(true)
        .open(&path)
        .expect("open plain file");
    // Distinct buffers, as the log's inputs are: both sides read their data from memory
    // rather than from a hot cache line.
    let inputs: Vec<Vec<u8>> = (0..batches).map(|i| vec![i as u8; size]).collect();
    let start = Instant::now();
    for data in &inputs {
        f.write_all(data).expect("write");
        if sync_each {
            f.sync_data().expect("fdatasync");
        }
    }
    let secs = start.elapsed().as_secs_f64();
    std::fs::remove_file(&path).expect("remove plain file");
    mbps(batches * size, secs)
}

fn log_append(dir: &std::path::Path, batches: usize, flush_each: bool) -> f64 {
    let config = LogConfig {
        flush_messages: if flush_each { 1 } else { i64::MAX },
        ..LogConfig::default()
    };
    let mut log = Log::open(dir, config, 0).expect("open log");
    let template = batch();
    // Built before the clock starts: the copy a produce request needs is not the log's.
    let inputs: Vec<BytesMut> = (0..batches).map(|_| template.clone()).collect();
    let start = Instant::now();
    for input in inputs {
        log.append_as_leader(input, 0, 0).expect("append");
    }
    let secs = start.elapsed().as_secs_f64();
    mbps(batches * template.len(), secs)
}

fn log_scan(log: &Log) -> f64 {
    let start = Instant::now();
    let mut offset = log.log_start_offset();
    let mut bytes = 0;
    while offset < log.log_end_offset() {
        let r = log.read(offset, 1 << 20, i64::MAX).expect("read");
        bytes += r.bytes.len();
        offset = r.next_offset;
    }
    mbps(bytes, start.elapsed().as_secs_f64())
}

/// The round with the median log/plain ratio: (log MB/s, plain MB/s, ratio).
fn median_round(rounds: &[(f64, f64)]) -> (f64, f64, f64) {
    let mut by_ratio: Vec<(f64, f64, f64)> = rounds.iter().map(|&(l, p)| (l, p, l / p)).collect();
    by_ratio.sort_by(|a, b| a.2.total_cmp(&b.2));
    by_ratio[by_ratio.len() / 2]
}

fn ratios(rounds: &[(f64, f64)]) -> String {
    rounds
        .iter()
        .map(|(l, p)| format!("{:.2}", l / p))
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let mb: usize = std::env::var("KRAFTD_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let size = batch().len();
    let n = mb * 1024 * 1024 / size;
    let n_sync = (n / 10).max(1);
    let root = tempfile::tempdir().expect("temp dir");

    // The disk here is shared and noisy, so each figure is the median of several rounds in
    // which the plain baseline and the log alternate, and the ratio is taken per round.
    let rounds = 5;
    let mut no_flush = Vec::new();
    let mut flush_each = Vec::new();
    for round in 0..rounds {
        let plain = plain_write(root.path(), n, size, false);
        let dir = root.path().join(format!("nosync-{round}"));
        let log = log_append(&dir, n, false);
        std::fs::remove_dir_all(&dir).expect("remove bench log");
        no_flush.push((log, plain));
        let plain_sync = plain_write(root.path(), n_sync, size, true);
        let dir = root.path().join(format!("sync-{round}"));
        let log_sync = log_append(&dir, n_sync, true);
        std::fs::remove_dir_all(&dir).expect("remove bench log");
        flush_each.push((log_sync, plain_sync));
    }
    let (log, plain, ratio) = median_round(&no_flush);
    println!(
        "append, no flush:       log {log:8.1} MB/s   plain write {plain:8.1} MB/s   median ratio {ratio:.2} (per round: {})",
        ratios(&no_flush)
    );
    let (log_sync, plain_sync, ratio) = median_round(&flush_each);
    println!(
        "append, flush each:     log {log_sync:8.1} MB/s   write+fdatasync {plain_sync:8.1} MB/s   median ratio {ratio:.2} (per round: {})",
        ratios(&flush_each)
    );
    let dir = root.path().join("scan");
    log_append(&dir, n, false);

    // What validating a batch costs on its own (the leader checks every CRC; a plain write
    // does not), to read the no-flush ratio against.
    let sample = batch();
    let rounds = 20_000;
    let start = Instant::now();
    let mut acc = 0u32;
    for _ in 0..rounds {
        let b = kraftd_protocol::records::RecordBatch::parse(Bytes::copy_from_slice(&sample))
            .expect("parse");
        acc = acc.wrapping_add(b.compute_crc());
    }
    println!(
        "copy + parse + crc32c alone: {:8.1} MB/s (checksum {acc:08x})",
        mbps(rounds * sample.len(), start.elapsed().as_secs_f64())
    );

    let opened = Log::open(&dir, LogConfig::default(), 0).expect("reopen");
    let cold = log_scan(&opened);
    let warm = log_scan(&opened);
    println!("read, fresh open: {cold:8.1} MB/s   read, warm: {warm:8.1} MB/s   ({mb} MiB, {size}-byte batches)");
}
