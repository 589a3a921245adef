//! The process metrics every Prometheus client library exports (`process_cpu_seconds_total`,
//! `process_resident_memory_bytes`, `process_virtual_memory_bytes`, `process_open_fds`,
//! `process_max_fds`, `process_start_time_seconds`), so the node dashboards people already
//! have work on kraftd: uptime is `time() - process_start_time_seconds`.
//!
//! Read from `/proc/self` at each scrape, as the Go and Java clients do, without `unsafe`:
//! the kernel's clock tick rate (the unit of the CPU times and the start time in
//! `/proc/self/stat`, what `getconf CLK_TCK` / `sysconf(_SC_CLK_TCK)` report) and the page
//! size (the unit of its RSS) come from the auxiliary vector the kernel handed this process
//! (`/proc/self/auxv`, entries `AT_CLKTCK` and `AT_PAGESZ`), which is where libc's `sysconf`
//! reads them too; when it cannot be read, Linux's fixed `USER_HZ` of 100 and 4096-byte
//! pages. Off Linux (no `/proc`) nothing is written.

use std::fmt::Write;
use std::sync::OnceLock;

/// `AT_PAGESZ` in `<elf.h>`.
const AT_PAGESZ: u64 = 6;
/// `AT_CLKTCK` in `<elf.h>`.
const AT_CLKTCK: u64 = 17;

/// What `/proc/self/auxv` says, read once (it never changes for a process).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Units {
    clock_ticks_per_second: u64,
    page_size: u64,
}

fn units() -> Units {
    static UNITS: OnceLock<Units> = OnceLock::new();
    *UNITS.get_or_init(|| {
        let auxv = std::fs::read("/proc/self/auxv").unwrap_or_default();
        parse_auxv(&auxv)
    })
}

/// The auxiliary vector: (type, value) pairs of native-endian machine words, ending at
/// `AT_NULL`.
fn parse_auxv(bytes: &[u8]) -> Units {
    const WORD: usize = std::mem::size_of::<usize>();
    let mut units = Units {
        clock_ticks_per_second: 100,
        page_size: 4096,
    };
    let word = |chunk: &[u8]| -> u64 {
        let mut b = [0u8; WORD];
        b.copy_from_slice(chunk);
        usize::from_ne_bytes(b) as u64
    };
    for entry in bytes.chunks_exact(2 * WORD) {
        let (key, value) = (word(&entry[..WORD]), word(&entry[WORD..]));
        match key {
            0 => break,
            AT_CLKTCK if value > 0 => units.clock_ticks_per_second = value,
            AT_PAGESZ if value > 0 => units.page_size = value,
            _ => {}
        }
    }
    units
}

/// The fields of `/proc/self/stat` we export, in their raw units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stat {
    utime_ticks: u64,
    stime_ticks: u64,
    /// Since boot.
    start_ticks: u64,
    virtual_bytes: u64,
    rss_pages: u64,
}

/// Fields 14, 15, 22, 23 and 24 of `proc(5)`'s `/proc/pid/stat`, counted after the command
/// name, which is in parentheses and may hold spaces and parentheses itself.
fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3 (the state).
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        utime_ticks: field(14)?,
        stime_ticks: field(15)?,
        start_ticks: field(22)?,
        virtual_bytes: field(23)?,
        rss_pages: field(24)?,
    })
}

/// The soft limit of "Max open files" in `/proc/self/limits`; `None` when unlimited.
fn parse_max_open_files(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line["Max open files".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// `btime` of `/proc/stat`: the boot time in unix seconds.
fn parse_boot_time(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

fn boot_time() -> Option<u64> {
    static BOOT: OnceLock<Option<u64>> = OnceLock::new();
    *BOOT.get_or_init(|| {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        parse_boot_time(&stat)
    })
}

fn metric(out: &mut String, name: &str, kind: &str, help: &str, node_id: i32, value: f64) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
    let _ = writeln!(out, "{name}{{node=\"{node_id}\"}} {value}");
}

/// Appends the process metrics of this process; nothing where `/proc` cannot be read.
pub fn write_prometheus(node_id: i32, out: &mut String) {
    let units = units();
    let hz = units.clock_ticks_per_second as f64;
    if let Some(stat) = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .as_deref()
        .and_then(parse_stat)
    {
        let cpu = (stat.utime_ticks + stat.stime_ticks) as f64 / hz;
        metric(
            out,
            "process_cpu_seconds_total",
            "counter",
            "Total user and system CPU time spent in seconds.",
            node_id,
            cpu,
        );
        let rss = stat.rss_pages.saturating_mul(units.page_size) as f64;
        metric(
            out,
            "process_resident_memory_bytes",
            "gauge",
            "Resident memory size in bytes.",
            node_id,
            rss,
        );
        metric(
            out,
            "process_virtual_memory_bytes",
            "gauge",
            "Virtual memory size in bytes.",
            node_id,
            stat.virtual_bytes as f64,
        );
        if let Some(boot) = boot_time() {
            let start = boot as f64 + stat.start_ticks as f64 / hz;
            metric(
                out,
                "process_start_time_seconds",
                "gauge",
                "Start time of the process since unix epoch in seconds.",
                node_id,
                start,
            );
        }
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        // The directory handle being read is one of them, as in the Go client.
        let open = fds.count() as f64;
        metric(
            out,
            "process_open_fds",
            "gauge",
            "Number of open file descriptors.",
            node_id,
            open,
        );
    }
    if let Some(max) = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .as_deref()
        .and_then(parse_max_open_files)
    {
        metric(
            out,
            "process_max_fds",
            "gauge",
            "Maximum number of open file descriptors.",
            node_id,
            max as f64,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_command_name() {
        let line = "4242 (kraftd (x) y) S 1 4242 4242 0 -1 4194560 1234 0 0 0 \
                    250 75 0 0 20 0 12 0 987654 123456789 3000 18446744073709551615 1 1 0";
        assert_eq!(
            parse_stat(line),
            Some(Stat {
                utime_ticks: 250,
                stime_ticks: 75,
                start_ticks: 987654,
                virtual_bytes: 123456789,
                rss_pages: 3000,
            })
        );
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn auxv_gives_clock_ticks_and_page_size() {
        let mut bytes = Vec::new();
        for (k, v) in [
            (3u64, 77u64),
            (AT_PAGESZ, 16384),
            (AT_CLKTCK, 250),
            (0, 0),
            (AT_CLKTCK, 1),
        ] {
            bytes.extend_from_slice(&(k as usize).to_ne_bytes());
            bytes.extend_from_slice(&(v as usize).to_ne_bytes());
        }
        assert_eq!(
            parse_auxv(&bytes),
            Units {
                clock_ticks_per_second: 250,
                page_size: 16384
            }
        );
        assert_eq!(parse_auxv(&[]).clock_ticks_per_second, 100);
    }

    #[test]
    fn this_process_reads_as_getconf_says() {
        if !std::path::Path::new("/proc/self/auxv").exists() {
            return;
        }
        // USER_HZ is 100 on every Linux architecture kraftd builds for.
        assert_eq!(units().clock_ticks_per_second, 100);
        let mut out = String::new();
        write_prometheus(1, &mut out);
        for name in [
            "process_cpu_seconds_total{node=\"1\"} ",
            "process_resident_memory_bytes{node=\"1\"} ",
            "process_open_fds{node=\"1\"} ",
            "process_start_time_seconds{node=\"1\"} ",
        ] {
            assert!(out.contains(name), "{name} missing from\n{out}");
        }
    }

    #[test]
    fn limits_and_boot_time() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max open files            1024                 1048576              files     \n";
        assert_eq!(parse_max_open_files(limits), Some(1024));
        assert_eq!(
            parse_max_open_files("Max open files unlimited unlimited files"),
            None
        );
        assert_eq!(
            parse_boot_time("cpu 1 2\nbtime 1700000000\n"),
            Some(1700000000)
        );
    }
}
