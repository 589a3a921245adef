//! The machine under the benchmark: its limit (loopback TCP throughput, disk write bandwidth,
//! `fdatasync` latency) and CPU accounting from /proc.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

const MIB: f64 = (1 << 20) as f64;

// ---------------------------------------------------------------------------------------------
// The machine's limit.

pub(super) struct Limits {
    pub(super) loopback_mib_s: f64,
    pub(super) disk_mib_s: f64,
    pub(super) fsync_p50_us: f64,
    pub(super) fsync_p99_us: f64,
}

pub(super) fn measure_limits(dir: &Path, loopback_bytes: u64, disk_bytes: u64) -> Result<Limits> {
    println!(
        "==> loopback TCP: {} MiB in 1 MiB writes",
        loopback_bytes >> 20
    );
    let loopback_mib_s = loopback(loopback_bytes)?;
    println!("    {loopback_mib_s:.1} MiB/s");
    println!(
        "==> disk: {} MiB in 1 MiB writes, then fdatasync",
        disk_bytes >> 20
    );
    let path = dir.join("disk-bench.dat");
    let disk_mib_s = disk_write(&path, disk_bytes)?;
    println!("    {disk_mib_s:.1} MiB/s");
    let (fsync_p50_us, fsync_p99_us) = fsync_latency(&path, 200)?;
    let _ = std::fs::remove_file(&path);
    println!("==> fdatasync of 4 KiB: p50 {fsync_p50_us:.0} us, p99 {fsync_p99_us:.0} us");
    Ok(Limits {
        loopback_mib_s,
        disk_mib_s,
        fsync_p50_us,
        fsync_p99_us,
    })
}

/// MiB/s from a sender to a receiver thread over 127.0.0.1, timed until the receiver has read
/// everything.
fn loopback(bytes: u64) -> Result<f64> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let receiver = std::thread::spawn(move || -> std::io::Result<u64> {
        let (mut stream, _) = listener.accept()?;
        let mut buf = vec![0u8; 1 << 20];
        let mut total = 0u64;
        loop {
            let n = stream.read(&mut buf)?;
            if n == 0 {
                return Ok(total);
            }
            total += n as u64;
        }
    });
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let chunk = vec![0x5au8; 1 << 20];
    let t0 = Instant::now();
    let mut sent = 0u64;
    while sent < bytes {
        stream.write_all(&chunk)?;
        sent += chunk.len() as u64;
    }
    drop(stream);
    let received = receiver
        .join()
        .map_err(|_| anyhow::anyhow!("loopback receiver panicked"))??;
    let secs = t0.elapsed().as_secs_f64();
    if received != sent {
        bail!("loopback receiver got {received} of {sent} bytes");
    }
    Ok(sent as f64 / MIB / secs)
}

/// MiB/s writing `bytes` in 1 MiB chunks to a new file and `fdatasync`ing it once at the end.
fn disk_write(path: &Path, bytes: u64) -> Result<f64> {
    let mut file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let chunk: Vec<u8> = (0..1 << 20).map(|i| (i * 31 % 251) as u8).collect();
    let t0 = Instant::now();
    let mut written = 0u64;
    while written < bytes {
        file.write_all(&chunk)?;
        written += chunk.len() as u64;
    }
    file.sync_data()?;
    Ok(written as f64 / MIB / t0.elapsed().as_secs_f64())
}

/// p50 and p99 in microseconds of appending 4 KiB and `fdatasync`ing, `n` times.
fn fsync_latency(path: &Path, n: usize) -> Result<(f64, f64)> {
    let mut file = File::create(path)?;
    let block = vec![0xa5u8; 4096];
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let t0 = Instant::now();
        file.write_all(&block)?;
        file.sync_data()?;
        samples.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() as f64 * q) as usize).min(samples.len() - 1)];
    Ok((at(0.50), at(0.99)))
}

// ---------------------------------------------------------------------------------------------
// CPU accounting from /proc.

/// utime + stime of a process, in clock ticks.
pub(super) fn process_ticks(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the ")" that closes the command name: state is field 3, utime 14, stime 15.
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    get(11) + get(12)
}

/// A size field of `/proc/<pid>/status` (as `VmRSS:`, `VmHWM:`), in bytes; 0 if unreadable.
pub(super) fn status_bytes(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        * 1024
}

/// (busy, total) ticks of all cores from /proc/stat's first line.
pub(super) fn machine_ticks() -> (u64, u64) {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    let nums: Vec<u64> = stat
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .skip(1)
        .filter_map(|f| f.parse().ok())
        .collect();
    let total: u64 = nums.iter().sum();
    // idle and iowait
    let idle = nums.get(3).copied().unwrap_or(0) + nums.get(4).copied().unwrap_or(0);
    (total - idle, total.max(1))
}

/// USER_HZ: 100 on every Linux this runs on (`getconf CLK_TCK`).
pub(super) fn clock_ticks() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100.0)
}
