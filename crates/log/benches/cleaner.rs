//! The cleaner's benchmark (issue 13): one thread cleaning a generated compacted log (keyed
//! records, every key written more than once, all of it dirty), in MB/s of dirty log
//! cleaned, beside a plain sequential read of the same segment files measured in the same
//! run; and the memory the offset map takes per million keys.
//!
//! `cargo bench -p kraftd-log --bench cleaner`. `KRAFTD_BENCH_CLEANER_MB` sets the log's
//! size (default 200) and `KRAFTD_BENCH_CLEANER_KEYS` the distinct keys (default 1,000,000)
//! for a quick run; `KRAFTD_BENCH_CLEANER_DIR` where it is written (default the system temp
//! directory, so it measures that disk; the files are in the page cache for both the read
//! and the clean, which were just written, as a cleaner following producers finds them).
//!
//! Apache Kafka 4.4's cleaner on the same log: `cargo xtask bench cleaner [--quick]` runs
//! this bench with `KRAFTD_BENCH_CLEANER_COPY_TO` (where the generated segment files are
//! copied before cleaning), puts those files in a stopped single-node Kafka broker's
//! partition of a compacted topic, restarts it with one cleaner thread and the same dedupe
//! buffer, and reads the clean's summary from Kafka's log (Kafka's `Cleaner` is only
//! reachable through a whole `UnifiedLog`, so a real broker does the cleaning).

use std::io::Read;
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use kraftd_log::cleaner::CleanerConfig;
use kraftd_log::config::CleanupPolicy;
use kraftd_log::{CleanCommit, Log, LogConfig};
use kraftd_protocol::records::RecordBatchBuilder;

const RECORDS_PER_BATCH: usize = 100;
const VALUE_BYTES: usize = 100;
const MIB: f64 = 1024.0 * 1024.0;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A deterministic stream of keys over `0..keys`: every key once in a shuffled order
/// first (so all of them are present), then uniformly at random.
struct Keys {
    keys: u64,
    next: u64,
    state: u64,
}

impl Keys {
    fn next(&mut self) -> u64 {
        self.state = self
            .state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = self.next;
        self.next += 1;
        if n < self.keys {
            // A bijection of 0..keys (an odd multiplier modulo a power of two, skipping
            // values past the end) would be exact; this is close enough and cheap.
            (n.wrapping_mul(2654435761)) % self.keys
        } else {
            (self.state >> 33) % self.keys
        }
    }
}

/// Writes about `bytes` of keyed batches into a compacted log at `dir`, rolled so all of
/// it is cleanable; returns the log and the records written.
fn generate(dir: &std::path::Path, bytes: u64, keys: u64) -> (Log, u64) {
    let config = LogConfig {
        segment_bytes: 64 * 1024 * 1024,
        retention_ms: -1,
        cleanup_policy: CleanupPolicy::COMPACT,
        ..LogConfig::default()
    };
    let mut log = Log::open(dir, config, 0).expect("open log");
    let mut stream = Keys {
        keys,
        next: 0,
        state: 42,
    };
    let value = Bytes::from(vec![b'v'; VALUE_BYTES]);
    let mut records = 0u64;
    while log.size_in_bytes() < bytes {
        let mut b = RecordBatchBuilder::new(0);
        for _ in 0..RECORDS_PER_BATCH {
            let key = Bytes::from(format!("key-{:010}", stream.next()));
            b.append(1_000, Some(key), Some(value.clone()), Vec::new())
                .expect("record fits");
        }
        let batch = BytesMut::from(&b.build().expect("batch builds")[..]);
        log.append_as_leader(batch, 0, 1_000).expect("append");
        records += RECORDS_PER_BATCH as u64;
    }
    log.roll().expect("roll");
    log.flush().expect("flush");
    (log, records)
}

/// Reads every `.log` file of `dir` front to back in `chunk`-byte reads: the floor.
fn plain_read(dir: &std::path::Path, chunk: usize) -> (u64, f64) {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("list dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    files.sort();
    let mut buf = vec![0u8; chunk];
    let mut total = 0u64;
    let mut checksum = 0u8;
    let start = Instant::now();
    for path in files {
        let mut f = std::fs::File::open(&path).expect("open segment");
        loop {
            let n = f.read(&mut buf).expect("read");
            if n == 0 {
                break;
            }
            checksum ^= buf[n - 1];
            total += n as u64;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(checksum);
    (total, secs)
}

/// Copies the segment files (`.log`, `.index`, `.timeindex`) of `from` into `to`, before
/// cleaning, for `cargo xtask bench cleaner` to hand the same log to Kafka's cleaner.
fn copy_segments(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("create copy dir");
    for entry in std::fs::read_dir(from).expect("list dir").flatten() {
        let path = entry.path();
        let segment_file = path
            .extension()
            .is_some_and(|e| e == "log" || e == "index" || e == "timeindex");
        if segment_file {
            std::fs::copy(&path, to.join(entry.file_name())).expect("copy segment file");
        }
    }
}

/// Peak resident memory of this process, from /proc (Linux), in bytes.
fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

fn main() {
    let mb = env_usize("KRAFTD_BENCH_CLEANER_MB", 200) as u64;
    let keys = env_usize("KRAFTD_BENCH_CLEANER_KEYS", 1_000_000) as u64;
    let parent = std::env::var_os("KRAFTD_BENCH_CLEANER_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(parent).expect("tempdir");
    let config = CleanerConfig::default();

    let started = Instant::now();
    let (mut log, records) = generate(dir.path(), mb * 1024 * 1024, keys);
    let dirty = log.size_in_bytes();
    println!(
        "log: {:.1} MiB, {records} records over {keys} keys, {} segments (generated in {:.1} s)",
        dirty as f64 / MIB,
        log.segment_count(),
        started.elapsed().as_secs_f64()
    );

    if let Some(to) = std::env::var_os("KRAFTD_BENCH_CLEANER_COPY_TO") {
        copy_segments(dir.path(), std::path::Path::new(&to));
        println!(
            "segments copied to {} (log end offset {})",
            std::path::Path::new(&to).display(),
            log.log_end_offset()
        );
    }

    let (read, read_secs) = plain_read(dir.path(), config.io_buffer_size);
    println!(
        "plain read of the segment files: {:.1} MiB in {:.3} s = {:.0} MiB/s",
        read as f64 / MIB,
        read_secs,
        read as f64 / MIB / read_secs
    );

    let rss_before = peak_rss();
    let mut map = config.offset_map().expect("offset map");
    let plan = log
        .plan_clean(1_000, 0, i64::MAX, Default::default())
        .expect("something to clean");
    let start = Instant::now();
    let cleaned = plan
        .execute(&mut map, config.io_buffer_size, &mut |_| true)
        .expect("clean");
    let exec_secs = start.elapsed().as_secs_f64();
    let commit_start = Instant::now();
    let CleanCommit::Swapped {
        next_dirty_offset,
        stats,
    } = log.commit_clean(cleaned).expect("commit")
    else {
        panic!("clean discarded");
    };
    let commit_secs = commit_start.elapsed().as_secs_f64();
    let total_secs = exec_secs + commit_secs;
    let passes = if next_dirty_offset >= log.log_end_offset() {
        "one pass"
    } else {
        "map full: more passes needed"
    };
    println!(
        "clean (1 thread, {passes}): {:.1} MiB dirty in {:.3} s (map {:.3} s, rewrite {:.3} s, swap {:.3} s) = {:.0} MiB/s; {:.0}% of the plain read's speed",
        dirty as f64 / MIB,
        total_secs,
        stats.map_ms as f64 / 1000.0,
        exec_secs - stats.map_ms as f64 / 1000.0,
        commit_secs,
        dirty as f64 / MIB / total_secs,
        100.0 * read_secs / total_secs,
    );
    println!(
        "  records read {} (map {}), kept {}; bytes written {:.1} MiB ({:.0}% of read); log now {:.1} MiB",
        stats.messages_read,
        stats.map_messages_read,
        stats.messages_written,
        stats.bytes_written as f64 / MIB,
        100.0 * stats.bytes_written as f64 / stats.bytes_read.max(1) as f64,
        log.size_in_bytes() as f64 / MIB,
    );
    let entries = (stats.buffer_utilization * map.slots() as f64).round();
    let per_entry = 24.0;
    let load = config.io_buffer_load_factor;
    println!(
        "offset map: {:.0} MiB allocated (log.cleaner.dedupe.buffer.size, 1 thread), {} slots, {:.0} keys mapped ({:.1}% full)",
        (map.slots() as f64 * per_entry) / MIB,
        map.slots(),
        entries,
        100.0 * stats.buffer_utilization
    );
    println!(
        "  per million keys: {:.1} MiB of entries (24 B each), {:.1} MiB of dedupe buffer at load factor {load}",
        1e6 * per_entry / MIB,
        1e6 * per_entry / load / MIB,
    );
    if let (Some(before), Some(after)) = (rss_before, peak_rss()) {
        println!(
            "  peak RSS grew {:.1} MiB during the clean (the map's pages touched, plus buffers)",
            after.saturating_sub(before) as f64 / MIB
        );
    }
}
