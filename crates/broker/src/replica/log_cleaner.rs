//! Kafka's `LogCleaner` and `LogCleanerManager` on the broker: `log.cleaner.threads` threads
//! that pick the dirtiest compacted log (the highest dirty ratio past its
//! `min.cleanable.dirty.ratio`, or one `max.compaction.lag.ms` forces), clean it with the
//! log store's three steps (plan under the partition's lock, execute without it, commit
//! under it again), keep the `cleaner-offset-checkpoint` files, and sleep
//! `log.cleaner.backoff.ms` when nothing is dirty. Every replica cleans its own log, below
//! its own high watermark, as Kafka's do.
//!
//! I/O is throttled to `log.cleaner.io.max.bytes.per.second` (Kafka's `Throttler`); each
//! clean's offset map is at most the thread's share of `log.cleaner.dedupe.buffer.size`
//! and no larger than its dirty section can fill, allocated for that clean only. A clean that fails
//! marks its partition uncleanable (logged, counted in `uncleanable-partitions-count`) and
//! the others go on; the partition is tried again once it is re-created.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use kraftd_log::cleaner::{CleanerConfig, CleanerStats, OffsetMap, PendingClean};
use kraftd_log::clock::unix_ms;
use kraftd_log::CleanCommit;
use kraftd_protocol::Uuid;
use tracing::{debug, info, warn};

use kraftd_controller::control::config_defs::any_broker_config_def;
use kraftd_controller::publisher::Reconfigurable;

use super::partition::HostedPartition;
use super::replica_manager::ReplicaManager;

/// `log.cleaner.enable` and the `log.cleaner.*` sizes, as the broker runs them.
#[derive(Debug, Clone, PartialEq)]
pub struct LogCleanerConfig {
    /// `log.cleaner.enable` (true).
    pub enable: bool,
    pub cleaner: CleanerConfig,
}

impl Default for LogCleanerConfig {
    fn default() -> Self {
        LogCleanerConfig {
            enable: true,
            cleaner: CleanerConfig::default(),
        }
    }
}

impl LogCleanerMetrics {
    /// Prometheus text with Kafka's names (`kafka.log:type=LogCleaner,name=...` and
    /// `type=LogCleanerManager`, as a JMX exporter spells them).
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let mut metric = |group: &str, name: &str, kind: &str, help: &str, value: &AtomicU64| {
            kraftd_raft::driver::metrics::write_prometheus_metric(
                out,
                group,
                name,
                kind,
                help,
                node_id,
                value.load(Ordering::Relaxed),
            );
        };
        let (cleaner, manager) = ("kafka_log_logcleaner", "kafka_log_logcleanermanager");
        metric(
            manager,
            "max_dirty_percent",
            "gauge",
            "The highest dirty ratio among compacted logs, in percent.",
            &self.max_dirty_percent,
        );
        metric(
            cleaner,
            "cleaner_recopy_percent",
            "gauge",
            "Bytes written per byte read by the last clean, in percent.",
            &self.cleaner_recopy_percent,
        );
        metric(
            cleaner,
            "max_clean_time_secs",
            "gauge",
            "The longest last clean among the cleaner threads.",
            &self.max_clean_time_secs,
        );
        metric(
            cleaner,
            "max_compaction_delay_secs",
            "gauge",
            "How far past max.compaction.lag.ms the most overdue log is.",
            &self.max_compaction_delay_secs,
        );
        metric(
            manager,
            "uncleanable_partitions_count",
            "gauge",
            "Partitions the cleaner gave up on after an error.",
            &self.uncleanable_partitions_count,
        );
        metric(
            cleaner,
            "cleans_total",
            "counter",
            "Cleans swapped in.",
            &self.cleans,
        );
    }
}

/// The cleaner's gauges, with Kafka's names (`kafka.log:type=LogCleaner` and
/// `type=LogCleanerManager`).
#[derive(Debug, Default)]
pub struct LogCleanerMetrics {
    /// `max-dirty-percent`: the highest dirty ratio among compacted logs at the last scan.
    pub max_dirty_percent: AtomicU64,
    /// `cleaner-recopy-percent`: bytes written / bytes read of the last clean.
    pub cleaner_recopy_percent: AtomicU64,
    /// `max-clean-time-secs`: the longest of the threads' last cleans.
    pub max_clean_time_secs: AtomicU64,
    /// `max-compaction-delay-secs`: how far past `max.compaction.lag.ms` the most overdue
    /// log was at the last scan.
    pub max_compaction_delay_secs: AtomicU64,
    /// `uncleanable-partitions-count`.
    pub uncleanable_partitions_count: AtomicU64,
    /// Cleans completed (swapped in).
    pub cleans: AtomicU64,
}

/// What the threads share: which logs are being cleaned or may not be, and how far each
/// log is clean.
#[derive(Debug, Default)]
struct CleanerState {
    in_progress: HashSet<(Uuid, i32)>,
    uncleanable: HashSet<(Uuid, i32)>,
    /// (topic, partition) → first dirty offset, as in the `cleaner-offset-checkpoint`.
    checkpoints: BTreeMap<(String, i32), i64>,
}

/// The running cleaner; dropping it (or [`LogCleaner::shutdown`]) stops its threads, an
/// ongoing clean aborted at its next I/O.
#[derive(Debug)]
pub struct LogCleaner {
    replicas: Weak<ReplicaManager>,
    config: LogCleanerConfig,
    state: Arc<Mutex<CleanerState>>,
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    metrics: Arc<LogCleanerMetrics>,
}

/// The log cleaner as a [`Reconfigurable`]: Kafka's `LogCleaner.RECONFIGURABLE_CONFIGS`
/// (`log.cleaner.threads`, `log.cleaner.dedupe.buffer.size`,
/// `log.cleaner.io.buffer.load.factor`, `log.cleaner.io.buffer.size`,
/// `log.cleaner.io.max.bytes.per.second`, `log.cleaner.backoff.ms`) set dynamically, on this
/// broker or as the cluster default, over the properties file's values; a change stops the
/// threads (an ongoing clean is abandoned and tried again) and starts them with the new
/// settings, as Kafka's `LogCleaner.reconfigure`.
#[derive(Debug)]
pub struct LogCleanerReconfigurer {
    /// The settings of the properties file, which dynamic values override.
    file: CleanerConfig,
    cleaner: Arc<Mutex<Option<LogCleaner>>>,
}

/// One cleaner thread's view of the shared parts.
struct CleanerThread {
    id: usize,
    replicas: Weak<ReplicaManager>,
    config: CleanerConfig,
    state: Arc<Mutex<CleanerState>>,
    metrics: Arc<LogCleanerMetrics>,
    stop: Arc<AtomicBool>,
    /// This thread's last clean time, for `max-clean-time-secs`.
    last_clean_secs: Arc<Vec<AtomicU64>>,
}

/// A candidate log and how dirty it is.
struct Candidate {
    hosted: Arc<HostedPartition>,
    ratio: f64,
    first_dirty: i64,
}

impl LogCleaner {
    /// Starts `log.cleaner.threads` threads over `replicas`' partitions (none when
    /// `log.cleaner.enable` is false), resuming from the `cleaner-offset-checkpoint` files.
    pub fn start(replicas: &Arc<ReplicaManager>, config: &LogCleanerConfig) -> LogCleaner {
        let log_manager = replicas.log_manager();
        let mut cleaner = LogCleaner {
            replicas: Arc::downgrade(replicas),
            config: config.clone(),
            state: Arc::new(Mutex::new(CleanerState {
                checkpoints: log_manager.read_cleaner_checkpoints(),
                ..Default::default()
            })),
            stop: Arc::new(AtomicBool::new(false)),
            threads: Vec::new(),
            metrics: Arc::new(LogCleanerMetrics::default()),
        };
        cleaner.start_threads();
        cleaner
    }

    /// The settings the threads run with.
    pub fn config(&self) -> &LogCleanerConfig {
        &self.config
    }

    /// Runs the threads with new sizes (Kafka's `LogCleaner.reconfigure`): the running ones
    /// are stopped (a clean under way is abandoned, its log left as it was) and
    /// `cleaner.threads` new ones started, sharing the checkpoints and metrics. Nothing
    /// happens when the sizes are the ones running, or the cleaner is disabled.
    pub fn reconfigure(&mut self, cleaner: CleanerConfig) {
        if cleaner == self.config.cleaner || !self.config.enable {
            return;
        }
        self.stop_threads();
        self.stop = Arc::new(AtomicBool::new(false));
        self.config.cleaner = cleaner;
        self.start_threads();
        let c = &self.config.cleaner;
        info!(
            threads = self.threads.len(),
            dedupe_buffer_size = c.dedupe_buffer_size,
            io_buffer_load_factor = c.io_buffer_load_factor,
            io_buffer_size = c.io_buffer_size,
            io_max_bytes_per_second = c.io_max_bytes_per_second,
            backoff_ms = c.backoff_ms,
            "log cleaner reconfigured"
        );
    }

    /// Starts `log.cleaner.threads` threads (none when `log.cleaner.enable` is false).
    fn start_threads(&mut self) {
        if !self.config.enable {
            return;
        }
        let count = self.config.cleaner.threads.max(1);
        let last_clean_secs = Arc::new((0..count).map(|_| AtomicU64::new(0)).collect());
        for id in 0..count {
            let thread = CleanerThread {
                id,
                replicas: self.replicas.clone(),
                config: self.config.cleaner.clone(),
                state: Arc::clone(&self.state),
                metrics: Arc::clone(&self.metrics),
                stop: Arc::clone(&self.stop),
                last_clean_secs: Arc::clone(&last_clean_secs),
            };
            let spawned = std::thread::Builder::new()
                .name(format!("kafka-log-cleaner-thread-{id}"))
                .spawn(move || thread.run());
            match spawned {
                Ok(handle) => self.threads.push(handle),
                Err(e) => warn!(error = %e, "could not start a log cleaner thread"),
            }
        }
    }

    pub fn metrics(&self) -> &Arc<LogCleanerMetrics> {
        &self.metrics
    }

    /// Stops the threads and waits for them (an ongoing clean stops at its next I/O and
    /// leaves the log as it was).
    pub fn shutdown(mut self) {
        self.stop_threads();
    }

    fn stop_threads(&mut self) {
        self.stop.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            t.thread().unpark();
            let _ = t.join();
        }
    }
}

impl Drop for LogCleaner {
    fn drop(&mut self) {
        self.stop_threads();
    }
}

impl LogCleanerReconfigurer {
    /// Takes over `cleaner` (its settings being the properties file's); the broker keeps
    /// the returned handle to stop it at shutdown.
    pub fn new(
        cleaner: LogCleaner,
    ) -> (Arc<LogCleanerReconfigurer>, Arc<Mutex<Option<LogCleaner>>>) {
        let file = cleaner.config.cleaner.clone();
        let cleaner = Arc::new(Mutex::new(Some(cleaner)));
        let reconfigurer = Arc::new(LogCleanerReconfigurer {
            file,
            cleaner: Arc::clone(&cleaner),
        });
        (reconfigurer, cleaner)
    }

    /// The properties file's settings with `configs`' dynamic values over them, each checked
    /// by Kafka's definition.
    fn cleaner_config(&self, configs: &BTreeMap<String, String>) -> Result<CleanerConfig, String> {
        fn value<T: std::str::FromStr>(
            configs: &BTreeMap<String, String>,
            key: &str,
            file: T,
        ) -> Result<T, String> {
            let Some(v) = configs.get(key) else {
                return Ok(file);
            };
            if let Some(def) = any_broker_config_def(key) {
                def.validate(v).map_err(|e| e.to_string())?;
            }
            v.trim()
                .parse()
                .map_err(|_| format!("Invalid value {v} for configuration {key}"))
        }
        let f = &self.file;
        Ok(CleanerConfig {
            threads: value(configs, "log.cleaner.threads", f.threads)?,
            dedupe_buffer_size: value(
                configs,
                "log.cleaner.dedupe.buffer.size",
                f.dedupe_buffer_size,
            )?,
            io_buffer_load_factor: value(
                configs,
                "log.cleaner.io.buffer.load.factor",
                f.io_buffer_load_factor,
            )?,
            io_buffer_size: value(configs, "log.cleaner.io.buffer.size", f.io_buffer_size)?,
            io_max_bytes_per_second: value(
                configs,
                "log.cleaner.io.max.bytes.per.second",
                f.io_max_bytes_per_second,
            )?,
            backoff_ms: value(configs, "log.cleaner.backoff.ms", f.backoff_ms)?,
        })
    }
}

impl Reconfigurable for LogCleanerReconfigurer {
    /// Kafka's `LogCleaner.validateReconfiguration`: at least one thread, and at most a
    /// halving or a doubling of the threads running.
    fn validate_reconfiguration(&self, configs: &BTreeMap<String, String>) -> Result<(), String> {
        let new = self.cleaner_config(configs)?;
        let guard = self.cleaner.lock().unwrap_or_else(|p| p.into_inner());
        let Some(current) = guard.as_ref().map(|c| c.config.cleaner.threads) else {
            return Ok(());
        };
        if new.threads < 1 {
            return Err("Log cleaner threads should be at least 1".to_string());
        }
        if new.threads < current / 2 {
            return Err(format!(
                "Log cleaner threads cannot be reduced to less than half the current value {current}"
            ));
        }
        if new.threads > current * 2 {
            return Err(format!(
                "Log cleaner threads cannot be increased to more than double the current value {current}"
            ));
        }
        Ok(())
    }

    fn reconfigure(&self, configs: &BTreeMap<String, String>) {
        let new = match self.cleaner_config(configs) {
            Ok(new) => new,
            Err(e) => {
                warn!(error = %e, "log cleaner not reconfigured");
                return;
            }
        };
        let mut guard = self.cleaner.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cleaner) = guard.as_mut() {
            cleaner.reconfigure(new);
        }
    }
}

fn lock(state: &Mutex<CleanerState>) -> std::sync::MutexGuard<'_, CleanerState> {
    state.lock().unwrap_or_else(|p| p.into_inner())
}

impl CleanerThread {
    fn run(mut self) {
        let backoff = Duration::from_millis(self.config.backoff_ms.max(1) as u64);
        while !self.stop.load(Ordering::Acquire) {
            let Some(replicas) = self.replicas.upgrade() else {
                return;
            };
            let cleaned = self.clean_filthiest(&replicas);
            drop(replicas);
            if !cleaned {
                std::thread::park_timeout(backoff);
            }
        }
    }

    /// Scans the compacted logs (updating the dirty gauges), cleans the filthiest one that
    /// needs it; false when none did.
    fn clean_filthiest(&mut self, replicas: &Arc<ReplicaManager>) -> bool {
        let now = unix_ms();
        let (mut max_ratio, mut max_delay_ms) = (0.0f64, 0i64);
        let mut best: Option<Candidate> = None;
        for hosted in replicas.all_partitions() {
            let key = (hosted.tp.topic_id, hosted.tp.partition);
            let checkpointed = {
                let state = lock(&self.state);
                if state.in_progress.contains(&key) || state.uncleanable.contains(&key) {
                    continue;
                }
                state
                    .checkpoints
                    .get(&(hosted.tp.topic.clone(), hosted.tp.partition))
                    .copied()
            };
            let mut p = hosted.lock();
            let config = p.log().config();
            // A replica moving to another log dir is not cleaned (Kafka pauses it).
            if !config.cleanup_policy.compact || p.future_log().is_some() {
                continue;
            }
            let min_ratio = config.min_cleanable_dirty_ratio;
            // A truncation below the checkpoint (a follower's divergence, an unclean
            // election) means what lies above it now was written again: it is dirty.
            let checkpointed = match (p.log_mut().take_truncated_floor(), checkpointed) {
                (Some(floor), Some(c)) if floor < c => {
                    let tp = (hosted.tp.topic.clone(), hosted.tp.partition);
                    lock(&self.state).checkpoints.insert(tp, floor);
                    Some(floor)
                }
                (_, c) => c,
            };
            let cleanable = match p.log().cleanable(now, checkpointed, p.high_watermark()) {
                Ok(c) => c,
                Err(e) => {
                    drop(p);
                    self.mark_uncleanable(&hosted, &e.to_string());
                    continue;
                }
            };
            drop(p);
            max_ratio = max_ratio.max(cleanable.cleanable_ratio);
            max_delay_ms = max_delay_ms.max(cleanable.max_compaction_delay_ms);
            if cleanable.should_clean(min_ratio)
                && best
                    .as_ref()
                    .is_none_or(|b| cleanable.cleanable_ratio > b.ratio)
            {
                best = Some(Candidate {
                    hosted,
                    ratio: cleanable.cleanable_ratio,
                    first_dirty: cleanable.first_dirty_offset,
                });
            }
        }
        let m = &self.metrics;
        m.max_dirty_percent
            .store((max_ratio * 100.0) as u64, Ordering::Relaxed);
        m.max_compaction_delay_secs
            .store((max_delay_ms / 1000).max(0) as u64, Ordering::Relaxed);
        let Some(candidate) = best else {
            return false;
        };
        let key = (candidate.hosted.tp.topic_id, candidate.hosted.tp.partition);
        if !lock(&self.state).in_progress.insert(key) {
            return false;
        }
        let result = self.clean(replicas, &candidate);
        lock(&self.state).in_progress.remove(&key);
        match result {
            Ok(cleaned) => cleaned,
            Err(reason) => {
                self.mark_uncleanable(&candidate.hosted, &reason);
                false
            }
        }
    }

    /// One clean of `candidate`: plan, execute, commit, checkpoint. Ok(false) when there
    /// was nothing to do or the clean was overtaken (truncated meanwhile) or stopped.
    fn clean(
        &mut self,
        replicas: &Arc<ReplicaManager>,
        candidate: &Candidate,
    ) -> Result<bool, String> {
        let hosted = &candidate.hosted;
        let now = unix_ms();
        let (pending, planned_dir) = {
            let p = hosted.lock();
            let planned_dir = p.log().dir().to_path_buf();
            let last_batches: HashMap<i64, i64> = p
                .producers()
                .active_producers()
                .filter(|e| e.last_data_offset() >= 0)
                .map(|e| (e.producer_id, e.last_data_offset()))
                .collect();
            let pending =
                p.log()
                    .plan_clean(now, candidate.first_dirty, p.high_watermark(), last_batches);
            (pending, planned_dir)
        };
        let Some(pending) = pending else {
            return Ok(false);
        };
        let mut map = self.offset_map_for(&pending)?;
        let started = Instant::now();
        let mut throttle = Throttler::new(self.config.io_max_bytes_per_second);
        let stop = Arc::clone(&self.stop);
        let mut io = |bytes: u64| {
            throttle.maybe_throttle(bytes);
            !stop.load(Ordering::Acquire)
        };
        let cleaned = match pending.execute(&mut map, self.config.io_buffer_size, &mut io) {
            Ok(c) => c,
            Err(e) if self.stop.load(Ordering::Acquire) => {
                debug!(topic = %hosted.tp.topic, partition = hosted.tp.partition, error = %e, "clean stopped by shutdown");
                return Ok(false);
            }
            Err(e) => return Err(format!("cleaning failed: {e}")),
        };
        let (commit, dir) = {
            let mut p = hosted.lock();
            if p.log().dir() != planned_dir || p.future_log().is_some() {
                // The replica moved (or started moving) to another log dir meanwhile.
                return Ok(false);
            }
            let commit = p.log_mut().commit_clean(cleaned);
            (commit, p.log().dir().to_path_buf())
        };
        let (next_dirty, stats) = match commit {
            Ok(CleanCommit::Swapped {
                next_dirty_offset,
                stats,
            }) => (next_dirty_offset, stats),
            Ok(CleanCommit::Discarded) => return Ok(false),
            Err(e) => return Err(format!("swapping the cleaned segments in failed: {e}")),
        };
        self.record(&stats, started.elapsed());
        lock(&self.state)
            .checkpoints
            .insert((hosted.tp.topic.clone(), hosted.tp.partition), next_dirty);
        self.write_checkpoints(replicas);
        info!(
            topic = %hosted.tp.topic,
            partition = hosted.tp.partition,
            next_dirty,
            read = stats.bytes_read,
            written = stats.bytes_written,
            dropped = stats.messages_dropped(),
            ms = stats.elapsed_ms,
            dir = %dir.display(),
            "cleaned"
        );
        Ok(true)
    }

    /// The offset map for one clean: the thread's share of `log.cleaner.dedupe.buffer.size`
    /// (Kafka's size), but no larger than the dirty section can fill — it spans that many
    /// offsets, so at most that many keys. Allocated zeroed for this clean and freed after
    /// it: pages never touched cost no memory, so cleaning a small log (most compacted
    /// topics) never holds Kafka's 128 MiB, and an idle broker holds none.
    fn offset_map_for(&self, pending: &PendingClean) -> Result<OffsetMap, String> {
        let c = &self.config;
        let span = pending.first_uncleanable_offset() - pending.first_dirty_offset();
        c.offset_map_for(span.max(1) as u64).ok_or_else(|| {
            format!(
                "log.cleaner.dedupe.buffer.size {} over {} threads (load factor {}) holds no entry",
                c.dedupe_buffer_size, c.threads, c.io_buffer_load_factor
            )
        })
    }

    fn record(&self, stats: &CleanerStats, took: Duration) {
        let m = &self.metrics;
        m.cleans.fetch_add(1, Ordering::Relaxed);
        if let Some(percent) = (stats.bytes_written * 100).checked_div(stats.bytes_read) {
            m.cleaner_recopy_percent.store(percent, Ordering::Relaxed);
        }
        self.last_clean_secs[self.id].store(took.as_secs(), Ordering::Relaxed);
        let max = self
            .last_clean_secs
            .iter()
            .map(|s| s.load(Ordering::Relaxed))
            .max()
            .unwrap_or(0);
        m.max_clean_time_secs.store(max, Ordering::Relaxed);
    }

    /// Rewrites every log dir's `cleaner-offset-checkpoint` with the hosted partitions'
    /// entries (a partition no longer hosted drops out, as Kafka's do when deleted).
    fn write_checkpoints(&self, replicas: &Arc<ReplicaManager>) {
        let checkpoints = lock(&self.state).checkpoints.clone();
        let entries: Vec<_> = replicas
            .all_partitions()
            .into_iter()
            .filter_map(|h| {
                let offset = *checkpoints.get(&(h.tp.topic.clone(), h.tp.partition))?;
                let dir = h.lock().log().dir().to_path_buf();
                Some((h.tp.topic.clone(), h.tp.partition, dir, offset))
            })
            .collect();
        if let Err(e) = replicas.log_manager().checkpoint_cleaner_offsets(&entries) {
            warn!(error = %e, "writing the cleaner-offset-checkpoint failed");
        }
    }

    fn mark_uncleanable(&self, hosted: &HostedPartition, reason: &str) {
        let mut state = lock(&self.state);
        if state
            .uncleanable
            .insert((hosted.tp.topic_id, hosted.tp.partition))
        {
            warn!(topic = %hosted.tp.topic, partition = hosted.tp.partition, "marking the partition uncleanable: {reason}");
            self.metrics
                .uncleanable_partitions_count
                .store(state.uncleanable.len() as u64, Ordering::Relaxed);
        }
    }
}

/// Kafka's `Throttler`: sleeps so the bytes reported average at most `bytes_per_second`.
struct Throttler {
    bytes_per_second: f64,
    started: Instant,
    bytes: u64,
}

impl Throttler {
    fn new(bytes_per_second: f64) -> Self {
        Throttler {
            bytes_per_second,
            started: Instant::now(),
            bytes: 0,
        }
    }

    fn maybe_throttle(&mut self, bytes: u64) {
        let wait = self.delay(bytes, self.started.elapsed());
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }

    /// How long to sleep after `bytes` more, `elapsed` since the start.
    fn delay(&mut self, bytes: u64, elapsed: Duration) -> Duration {
        self.bytes += bytes;
        if !self.bytes_per_second.is_finite() || self.bytes_per_second >= f64::MAX / 2.0 {
            return Duration::ZERO;
        }
        let due = Duration::from_secs_f64(self.bytes as f64 / self.bytes_per_second.max(1.0));
        due.saturating_sub(elapsed)
    }
}

#[cfg(test)]
mod tests {
    use super::Throttler;
    use std::time::Duration;

    #[test]
    fn the_throttler_holds_the_rate() {
        let mut t = Throttler::new(1_000_000.0);
        // 100 KB at 1 MB/s is due at 100 ms: 60 ms in, 40 ms remain; at 150 ms, none.
        assert_eq!(
            t.delay(100_000, Duration::from_millis(60)),
            Duration::from_millis(40)
        );
        assert_eq!(t.delay(0, Duration::from_millis(150)), Duration::ZERO);
        let mut free = Throttler::new(f64::MAX);
        assert_eq!(free.delay(u64::MAX / 2, Duration::ZERO), Duration::ZERO);
    }
}
