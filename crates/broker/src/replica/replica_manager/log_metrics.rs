//! Kafka's `kafka.log` metrics on a broker: `LogFlushStats.LogFlushRateAndTimeMs` (every
//! segment fdatasync of this process, timed by `kraftd_log::flush_timer`), per partition
//! `Log.Size`/`LogStartOffset`/`LogEndOffset` (values the open log keeps in memory, so a
//! scrape stats no file), and `LogManager.OfflineLogDirectoryCount` /
//! `LogDirectoryOffline` and `CordonedLogDirectoryCount` / `LogDirectoryCordoned`
//! (KIP-1066) per `log.dirs` entry.
//!
//! A directory reads as offline when an I/O error took it offline (the log layer's
//! `LogDirFailureChannel`, as Kafka's) or it is not an accessible directory at the scrape
//! (one `stat` per directory, not per partition).

use std::fmt::Write;
use std::sync::{LazyLock, Mutex, PoisonError};
use std::time::Duration;

use kraftd_raft::driver::metrics::write_prometheus_metric;
use kraftd_raft::driver::percentiles::{Percentiles, SummarySnapshot};

use super::ReplicaManager;

/// The process-wide flush timer, as Kafka's JVM-wide one.
static LOG_FLUSH: LazyLock<Mutex<Percentiles>> =
    LazyLock::new(|| Mutex::new(Percentiles::default()));

fn record_flush(duration: Duration) {
    let now = kraftd_log::clock::unix_ms().max(0) as u64;
    LOG_FLUSH
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .record(duration.as_secs_f64() * 1000.0, now);
}

/// Starts timing this process's log flushes (idempotent).
pub(super) fn install_flush_timer() {
    kraftd_log::flush_timer::observe_flushes(record_flush);
}

/// The flush summary as of `now_ms`.
pub fn log_flush_stats(now_ms: u64) -> SummarySnapshot {
    LOG_FLUSH
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .snapshot(now_ms)
}

/// A label value in Prometheus' text format: backslash, double quote and newline escaped.
pub(crate) fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl ReplicaManager {
    /// Prometheus text of the `kafka.log` metrics above.
    pub fn write_log_prometheus(&self, node_id: i32, out: &mut String) {
        let now = kraftd_log::clock::unix_ms().max(0) as u64;
        log_flush_stats(now).write_prometheus(
            out,
            "kafka_log_LogFlushStats_LogFlushRateAndTimeMs",
            "Time (ms) of each log segment flush (fdatasync); _count is the number of flushes.",
            node_id,
        );
        let mut logs: Vec<(String, i32, u64, i64, i64)> = self
            .all_partitions()
            .iter()
            .map(|hosted| {
                let p = hosted.lock();
                let log = p.log();
                (
                    hosted.tp.topic.to_string(),
                    hosted.tp.partition,
                    log.size_in_bytes(),
                    log.log_start_offset(),
                    log.log_end_offset(),
                )
            })
            .collect();
        logs.sort();
        let families: [(&str, &str); 3] = [
            ("Size", "Bytes of the partition's log segments."),
            ("LogStartOffset", "The partition log's start offset."),
            (
                "LogEndOffset",
                "The partition log's end offset (the next offset to write).",
            ),
        ];
        for (i, (name, help)) in families.into_iter().enumerate() {
            let family = format!("kafka_log_Log_{name}");
            let _ = writeln!(out, "# HELP {family} {help}");
            let _ = writeln!(out, "# TYPE {family} gauge");
            for (topic, partition, size, start, end) in &logs {
                let value = match i {
                    0 => *size as i64,
                    1 => *start,
                    _ => *end,
                };
                let topic = escape_label(topic);
                let _ = writeln!(
                    out,
                    "{family}{{node=\"{node_id}\",topic=\"{topic}\",partition=\"{partition}\"}} {value}"
                );
            }
        }
        let cordoned: Vec<(String, bool)> = self
            .log_manager()
            .dirs()
            .iter()
            .map(|dir| (dir.display().to_string(), self.log_manager.is_cordoned(dir)))
            .collect();
        let dirs: Vec<(String, bool)> = self
            .log_manager()
            .dirs()
            .iter()
            .map(|dir| {
                let online = !self.log_manager.failure_channel().is_offline(dir)
                    && std::fs::metadata(dir).is_ok_and(|m| m.is_dir());
                (dir.display().to_string(), !online)
            })
            .collect();
        let offline = dirs.iter().filter(|(_, offline)| *offline).count();
        write_prometheus_metric(
            out,
            "kafka_log_LogManager",
            "OfflineLogDirectoryCount",
            "gauge",
            "Log directories that are not accessible.",
            node_id,
            offline,
        );
        let family = "kafka_log_LogManager_LogDirectoryOffline";
        let _ = writeln!(
            out,
            "# HELP {family} 1 if the log directory is not accessible."
        );
        let _ = writeln!(out, "# TYPE {family} gauge");
        for (dir, offline) in dirs {
            let dir = escape_label(&dir);
            let _ = writeln!(
                out,
                "{family}{{node=\"{node_id}\",logDirectory=\"{dir}\"}} {}",
                u8::from(offline)
            );
        }
        write_prometheus_metric(
            out,
            "kafka_log_LogManager",
            "CordonedLogDirectoryCount",
            "gauge",
            "Log directories that are cordoned (cordoned.log.dirs, KIP-1066).",
            node_id,
            cordoned.iter().filter(|(_, c)| *c).count(),
        );
        let family = "kafka_log_LogManager_LogDirectoryCordoned";
        let _ = writeln!(
            out,
            "# HELP {family} 1 if the log directory is cordoned: it takes no new replica."
        );
        let _ = writeln!(out, "# TYPE {family} gauge");
        for (dir, cordoned) in cordoned {
            let dir = escape_label(&dir);
            let _ = writeln!(
                out,
                "{family}{{node=\"{node_id}\",logDirectory=\"{dir}\"}} {}",
                u8::from(cordoned)
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label(r#"a"b\c"#), r#"a\"b\\c"#);
        assert_eq!(escape_label("x\ny"), "x\\ny");
    }

    #[test]
    fn flushes_are_timed_once_installed() {
        install_flush_timer();
        let before = log_flush_stats(0).count;
        record_flush(Duration::from_millis(3));
        let after = log_flush_stats(kraftd_log::clock::unix_ms() as u64);
        assert!(after.count > before);
        assert!(after.p99 >= 0.0);
    }
}
