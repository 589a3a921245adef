//! The clock-jump fault (`--clock`): one node's wall clock jumped forward or back for the
//! hold, then set right again. Every node of such a run starts with `clockjump.c`, an
//! LD_PRELOAD object the harness builds with the system's `cc`, which adds to the process's
//! CLOCK_REALTIME (clock_gettime, gettimeofday, time) the offset in the node's offset file;
//! the harness writes that file in place ([`Clocks::set`]) and the object, which maps it,
//! sees the new offset at its next call — the node's clock jumps while it runs.
//!
//! Why an interposer: the kernel's time namespaces offset only the monotonic and boot-time
//! clocks, and only before a process enters them; `date -s` would move every node's clock
//! (and the harness's and the clients'). Rust's `SystemTime::now()` reads CLOCK_REALTIME
//! through libc's `clock_gettime` on glibc targets (libc reaches the vDSO itself), and so does
//! a JVM's `System.currentTimeMillis()`: both take the interposer (the unit test below shows
//! it for Rust's std, the clock-skew finding of `kraftd doctor` during the fault for kraftd).
//! Monotonic clocks are not moved, as a real wall-clock step (NTP, an operator) does not
//! move them either.

use std::os::unix::fs::FileExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// The interposer's source, built into the run's directory.
const SOURCE: &str = include_str!("clockjump.c");
/// The variable naming the offset file, read by the interposer at load.
const OFFSET_VAR: &str = "CHAOS_CLOCK_OFFSET_FILE";

/// The jumps the schedule draws from, in ms: forward by minutes or hours — under the
/// workload topic's `retention.ms` in such a run ([`RETENTION_MS`]), so time-based retention
/// must delete nothing — or back by minutes or past `message.timestamp.after.max.ms` (1 h),
/// when the node, leading, refuses the clients' records as from the future
/// (INVALID_TIMESTAMP, as Kafka does).
pub(super) const JUMPS_MS: [i64; 5] = [
    5 * 60_000,
    60 * 60_000,
    6 * 3_600_000,
    -5 * 60_000,
    -90 * 60_000,
];

/// The workload topic's `retention.ms` in a run with clock jumps: 12 h, twice the largest
/// jump ahead, so that a broker's time-based retention must find nothing to delete — Kafka
/// compares a segment's largest record timestamp with the broker's clock, so a jump ahead
/// past `retention.ms` would delete acknowledged records, in Kafka as in kraftd.
pub(super) const RETENTION_MS: &str = "43200000";

/// The brokers apply retention every second in such a run (Kafka's default, 5 min, is never
/// reached within a hold).
pub(super) const BROKER_CONFIG: &str = "log.retention.check.interval.ms=1000\n";

/// The interposer and every node's offset file.
pub(super) struct Clocks {
    library: PathBuf,
    dir: PathBuf,
}

impl Clocks {
    /// Builds the interposer into `run_dir/clock` with `cc` and writes a zero offset file for
    /// each of `ids`.
    pub(super) fn prepare(run_dir: &Path, ids: &[u32]) -> Result<Clocks> {
        let dir = run_dir.join("clock");
        std::fs::create_dir_all(&dir)?;
        let library = build(&dir)?;
        let clocks = Clocks { library, dir };
        for &id in ids {
            std::fs::write(clocks.offset_file(id), 0i64.to_ne_bytes())?;
        }
        Ok(clocks)
    }

    fn offset_file(&self, id: u32) -> PathBuf {
        self.dir.join(format!("node-{id}.offset"))
    }

    /// The environment node `id` is started with.
    pub(super) fn env(&self, id: u32) -> Vec<(String, PathBuf)> {
        vec![
            ("LD_PRELOAD".to_string(), self.library.clone()),
            (OFFSET_VAR.to_string(), self.offset_file(id)),
        ]
    }

    /// Sets node `id`'s clock `offset_ms` away from the real one, at once: written in place
    /// (never truncated, as the node maps the file).
    pub(super) fn set(&self, id: u32, offset_ms: i64) -> Result<()> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(self.offset_file(id))?;
        file.write_all_at(&(offset_ms * 1_000_000).to_ne_bytes(), 0)?;
        Ok(())
    }
}

/// `cc -shared -fPIC` of [`SOURCE`] into `dir`: the library's path.
fn build(dir: &Path) -> Result<PathBuf> {
    let source = dir.join("clockjump.c");
    std::fs::write(&source, SOURCE)?;
    let library = dir.join("libclockjump.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&library)
        .arg(&source)
        .arg("-ldl")
        .output()
        .context(
            "the clock-jump fault needs a C compiler (`cc`) to build its LD_PRELOAD \
             interposer, and none ran",
        )?;
    if !out.status.success() {
        bail!(
            "cc could not build the clock interposer {}: {}",
            source.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(library)
}

/// A jump for the log: "6 h ahead", "90 min behind".
pub(super) fn describe(offset_ms: i64) -> String {
    let minutes = offset_ms.unsigned_abs() / 60_000;
    let span = if minutes >= 60 && minutes % 60 == 0 {
        format!("{} h", minutes / 60)
    } else {
        format!("{minutes} min")
    };
    format!("{span} {}", if offset_ms >= 0 { "ahead" } else { "behind" })
}

/// The lowest segment base offset of each partition directory of `topic` in `log_dirs`
/// (from the `.log` file names): anything but 0 means segments were deleted.
pub(super) fn first_segments(log_dirs: &[PathBuf], topic: &str) -> Result<Vec<(String, u64)>> {
    let mut found = Vec::new();
    for log_dir in log_dirs {
        let Ok(entries) = std::fs::read_dir(log_dir) else {
            continue;
        };
        for entry in entries.filter_map(|e| e.ok()) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_partition = name
                .strip_prefix(topic)
                .and_then(|n| n.strip_prefix('-'))
                .is_some_and(|n| n.parse::<u32>().is_ok());
            if !is_partition {
                continue;
            }
            let first = std::fs::read_dir(entry.path())?
                .filter_map(|e| {
                    let n = e.ok()?.file_name().to_string_lossy().into_owned();
                    n.strip_suffix(".log")?.parse::<u64>().ok()
                })
                .min();
            if let Some(first) = first {
                found.push((name, first));
            }
        }
    }
    found.sort();
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    /// Run by [`rust_s_system_time_takes_the_interposer`] in a child process with the
    /// interposer preloaded: prints `SystemTime::now()` between two markers (a no-op in an
    /// ordinary test run).
    #[test]
    fn print_system_time_for_the_interposer_test() {
        if std::env::var_os(OFFSET_VAR).is_some() {
            let ms = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_millis());
            println!("<now>{ms}</now>");
        }
    }

    fn now_in_child(exe: &Path, clocks: &Clocks, id: u32) -> i64 {
        let out = Command::new(exe)
            .args([
                "--exact",
                "chaos::clock::tests::print_system_time_for_the_interposer_test",
                "--nocapture",
                "--test-threads=1",
            ])
            .envs(clocks.env(id))
            .output()
            .expect("running the test binary again");
        let text = String::from_utf8_lossy(&out.stdout);
        text.split("<now>")
            .nth(1)
            .and_then(|t| t.split("</now>").next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no time printed: {text}"))
    }

    /// Rust's `SystemTime::now()` (what kraftd's wall clock is, `kraftd_log::clock`) goes
    /// through libc's `clock_gettime`, so the interposer shifts it, forward and back, and a
    /// write of the offset file moves it for the next process reading it. Needs `cc` (the
    /// harness does too).
    #[test]
    fn rust_s_system_time_takes_the_interposer() {
        let dir = std::env::temp_dir().join(format!("chaos-clock-{}", std::process::id()));
        let clocks = Clocks::prepare(&dir, &[1]).expect("cc builds the interposer");
        let exe = std::env::current_exe().unwrap();
        let real = || {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64
        };
        for offset in [6 * 3_600_000, -90 * 60_000, 0] {
            clocks.set(1, offset).unwrap();
            let before = real();
            let seen = now_in_child(&exe, &clocks, 1);
            let after = real();
            assert!(
                seen >= before + offset && seen <= after + offset,
                "offset {offset}: the child read {seen}, the real clock was {before}..{after}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn jumps_read_as_spans() {
        assert_eq!(describe(6 * 3_600_000), "6 h ahead");
        assert_eq!(describe(-90 * 60_000), "90 min behind");
        assert_eq!(describe(-5 * 60_000), "5 min behind");
    }
}
