//! Windowed statistics with the semantics of Kafka's `org.apache.kafka.common.metrics`
//! (`SampledStat`, `Avg`, `Max`, `WindowedSum`, `Rate`, `TimeRatio`), so that our
//! raft-metrics, client quotas and connection quotas read as Kafka's do. Time is passed in as milliseconds: no clock inside, and
//! the tests drive it with explicit times.
//!
//! Kafka's semantics, as of 3.8 (apache/kafka#15889) and 4.x, which these follow:
//! - A [`SampledStat`] keeps up to `samples + 1` samples of `window_ms` each
//!   (`metrics.num.samples` = 2, `metrics.sample.window.ms` = 30000 by default). A record
//!   goes into the current sample unless `time - start >= window_ms`, in which case the next
//!   slot (round robin) is reset to start at that time. The extra slot keeps the sample
//!   that overlaps the start of the monitored window.
//! - Every measurement first purges: a sample whose last event is `samples × window_ms` or
//!   more before `now` is reset (emptied, starting at `now`). Samples that overlap the
//!   window are kept even when they started before it.
//! - `Avg` is the sum over the samples divided by their event count, NaN without events;
//!   `Max` the maximum over the samples, NaN without events; `WindowedSum` the plain sum.
//! - `Rate` is the windowed sum per second over the elapsed time since the oldest sample's
//!   start; when that elapsed time holds fewer than `samples - 1` full windows, the missing
//!   ones are added (they count as windows without events), so a first record does not read
//!   as a huge rate.
//! - `TimeRatio` (poll-idle-ratio-avg since KAFKA-14664, Kafka 3.5): the recorded durations
//!   divided by the time between the interval's start and the last record; each measurement
//!   closes the interval (the next one starts at the last record). The first record only
//!   opens the interval; without any, the ratio is the default.

/// Kafka's `MetricConfig` for sampled stats (the event-count window is unbounded there by
/// default, and here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleConfig {
    /// `metrics.sample.window.ms`.
    pub window_ms: u64,
    /// `metrics.num.samples`.
    pub samples: usize,
}

impl Default for SampleConfig {
    /// Kafka's defaults: two samples of 30 s.
    fn default() -> Self {
        Self {
            window_ms: 30_000,
            samples: 2,
        }
    }
}

/// Kafka's `SampledStat` specialised to what our sensors need: each sample carries the sum,
/// the maximum and the count of the values recorded in it, so one stat answers `Avg`,
/// `Max` and `WindowedSum` (Kafka's sensor records the same values at the same times into
/// its `Avg` and its `Max`, so their samples roll over together and this is equivalent).
#[derive(Debug, Clone)]
pub struct SampledStat {
    config: SampleConfig,
    samples: Vec<Sample>,
    /// Index of the sample being recorded into.
    current: usize,
}

/// Kafka's `Rate(TimeUnit.SECONDS, new WindowedSum())`: values per second over the window;
/// or, made with [`Rate::simple`], Kafka's `SimpleRate` (the replication quotas' rate).
#[derive(Debug, Clone)]
pub struct Rate {
    stat: SampledStat,
    /// `SimpleRate`: the window is the elapsed time, at least one sample, not padded to
    /// `samples - 1` windows.
    simple: bool,
}

/// Kafka's `TimeRatio`: the share of time taken by recorded durations since the last
/// measurement.
#[derive(Debug, Clone)]
pub struct TimeRatio {
    default_ratio: f64,
    /// `None` until the first record.
    interval_start_ms: Option<u64>,
    /// `None` until the second record.
    last_recorded_ms: Option<u64>,
    total_recorded_ms: f64,
}

#[derive(Debug, Clone, Copy)]
struct Sample {
    sum: f64,
    max: f64,
    event_count: u64,
    start_ms: u64,
    last_event_ms: u64,
}

impl Sample {
    fn new(now_ms: u64) -> Self {
        Self {
            sum: 0.0,
            max: f64::NEG_INFINITY,
            event_count: 0,
            start_ms: now_ms,
            last_event_ms: now_ms,
        }
    }

    fn is_complete(&self, time_ms: u64, config: &SampleConfig) -> bool {
        time_ms.saturating_sub(self.start_ms) >= config.window_ms
    }
}

impl SampledStat {
    pub fn new(config: SampleConfig) -> Self {
        assert!(
            config.window_ms > 0,
            "metrics.sample.window.ms must be positive"
        );
        assert!(config.samples > 0, "metrics.num.samples must be positive");
        Self {
            config,
            samples: Vec::with_capacity(config.samples + 1),
            current: 0,
        }
    }

    /// Kafka's `SampledStat::record`.
    pub fn record(&mut self, value: f64, time_ms: u64) {
        self.current_sample(time_ms);
        if self.samples[self.current].is_complete(time_ms, &self.config) {
            self.advance(time_ms);
        }
        let sample = &mut self.samples[self.current];
        sample.sum += value;
        sample.max = sample.max.max(value);
        sample.event_count += 1;
        sample.last_event_ms = time_ms;
    }

    /// Kafka's `Avg`: NaN when the window holds no event.
    pub fn avg(&mut self, now_ms: u64) -> f64 {
        self.purge_obsolete_samples(now_ms);
        let count: u64 = self.samples.iter().map(|s| s.event_count).sum();
        if count == 0 {
            return f64::NAN;
        }
        self.samples.iter().map(|s| s.sum).sum::<f64>() / count as f64
    }

    /// Kafka's `Max`: NaN when the window holds no event.
    pub fn max(&mut self, now_ms: u64) -> f64 {
        self.purge_obsolete_samples(now_ms);
        let count: u64 = self.samples.iter().map(|s| s.event_count).sum();
        if count == 0 {
            return f64::NAN;
        }
        self.samples
            .iter()
            .map(|s| s.max)
            .fold(f64::NEG_INFINITY, f64::max)
    }

    /// Kafka's `WindowedSum`.
    pub fn sum(&mut self, now_ms: u64) -> f64 {
        self.purge_obsolete_samples(now_ms);
        self.samples.iter().map(|s| s.sum).sum()
    }

    /// Kafka's `SampledStat::current`: the first sample is created on first use.
    fn current_sample(&mut self, time_ms: u64) {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(time_ms));
        }
    }

    /// Kafka's `SampledStat::oldest`: the sample that started first (created if none).
    fn oldest_start_ms(&mut self, now_ms: u64) -> u64 {
        self.current_sample(now_ms);
        self.samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms)
    }

    /// Moves to the next slot (round robin over `samples + 1`), starting it at `time_ms`.
    fn advance(&mut self, time_ms: u64) {
        let max_samples = self.config.samples + 1;
        self.current = (self.current + 1) % max_samples;
        if self.current >= self.samples.len() {
            self.samples.push(Sample::new(time_ms));
        } else {
            self.samples[self.current] = Sample::new(time_ms);
        }
        assert!(self.samples.len() <= max_samples);
    }

    /// Resets every sample whose last event is `samples × window_ms` or more before `now`.
    fn purge_obsolete_samples(&mut self, now_ms: u64) {
        let expire_age_ms = self.config.samples as u64 * self.config.window_ms;
        for sample in &mut self.samples {
            if now_ms.saturating_sub(sample.last_event_ms) >= expire_age_ms {
                *sample = Sample::new(now_ms);
            }
        }
    }
}

impl Rate {
    pub fn new(config: SampleConfig) -> Self {
        Self {
            stat: SampledStat::new(config),
            simple: false,
        }
    }

    /// Kafka's `SimpleRate`: the sum over the time since the oldest sample started, or over
    /// one sample's length when less time has passed, so the rate reads true from the first
    /// window on (Kafka's `ReplicationQuotaManager` measures with it).
    pub fn simple(config: SampleConfig) -> Self {
        Self {
            stat: SampledStat::new(config),
            simple: true,
        }
    }

    pub fn record(&mut self, value: f64, time_ms: u64) {
        self.stat.record(value, time_ms);
    }

    /// Values per second over the window (Kafka's `Rate::measure` in seconds).
    pub fn measure(&mut self, now_ms: u64) -> f64 {
        let sum = self.stat.sum(now_ms);
        let window_ms = self.window_size_ms(now_ms);
        if window_ms == 0 {
            // Kafka divides by zero here (only with one sample and no elapsed time): an
            // empty window reads 0, a non-empty one infinity, as Java's double division.
            return if sum == 0.0 { 0.0 } else { f64::INFINITY };
        }
        sum / (window_ms as f64 / 1000.0)
    }

    /// Kafka's `Rate::windowSize`: the time since the oldest sample started, raised to
    /// `samples - 1` full windows when fewer have elapsed.
    pub fn window_size_ms(&mut self, now_ms: u64) -> u64 {
        self.stat.purge_obsolete_samples(now_ms);
        let config = self.stat.config;
        let mut elapsed_ms = now_ms.saturating_sub(self.stat.oldest_start_ms(now_ms));
        if self.simple {
            return elapsed_ms.max(config.window_ms);
        }
        let full_windows = elapsed_ms / config.window_ms;
        let min_full_windows = config.samples as u64 - 1;
        if full_windows < min_full_windows {
            elapsed_ms += (min_full_windows - full_windows) * config.window_ms;
        }
        elapsed_ms
    }
}

impl TimeRatio {
    pub fn new(default_ratio: f64) -> Self {
        assert!(
            (0.0..=1.0).contains(&default_ratio),
            "ratio {default_ratio} not between 0 and 1"
        );
        Self {
            default_ratio,
            interval_start_ms: None,
            last_recorded_ms: None,
            total_recorded_ms: 0.0,
        }
    }

    /// A duration that ended at `time_ms`. The first one only opens the interval (it
    /// happened before the interval's start).
    pub fn record(&mut self, duration_ms: f64, time_ms: u64) {
        if self.interval_start_ms.is_none() {
            self.interval_start_ms = Some(time_ms);
        } else {
            self.total_recorded_ms += duration_ms;
            self.last_recorded_ms = Some(time_ms);
        }
    }

    /// The ratio since the previous measurement, which it closes.
    pub fn measure(&mut self) -> f64 {
        let (Some(start), Some(last)) = (self.interval_start_ms, self.last_recorded_ms) else {
            return self.default_ratio;
        };
        let interval_ms = last.saturating_sub(start) as f64;
        let ratio = if interval_ms == 0.0 {
            self.default_ratio
        } else if self.total_recorded_ms > interval_ms {
            1.0
        } else {
            self.total_recorded_ms / interval_ms
        };
        self.interval_start_ms = Some(last);
        self.total_recorded_ms = 0.0;
        ratio
    }
}

/// Kafka's `QuotaUtils.throttleTime`: how long a client whose observed rate `rate` exceeds
/// `quota`, over a window of `window_ms`, must wait for the rate to come back to the quota
/// assuming it records nothing more: `(rate - quota) / quota × window`, rounded.
pub fn throttle_time(rate: f64, quota: f64, window_ms: u64) -> u64 {
    let ms = (rate - quota) / quota * window_ms as f64;
    if ms.is_nan() || ms <= 0.0 {
        0
    } else if ms >= u64::MAX as f64 {
        u64::MAX
    } else {
        ms.round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Windows of 1 s, 2 samples: small numbers for hand-checked tests.
    fn config() -> SampleConfig {
        SampleConfig {
            window_ms: 1_000,
            samples: 2,
        }
    }

    #[test]
    fn defaults_are_kafkas() {
        assert_eq!(
            SampleConfig::default(),
            SampleConfig {
                window_ms: 30_000,
                samples: 2
            }
        );
    }

    #[test]
    fn avg_and_max_are_nan_without_events() {
        let mut s = SampledStat::new(config());
        assert!(s.avg(0).is_nan());
        assert!(s.max(0).is_nan());
        assert_eq!(s.sum(0), 0.0);
    }

    #[test]
    fn avg_and_max_combine_every_sample_in_the_window() {
        let mut s = SampledStat::new(config());
        s.record(10.0, 0);
        s.record(30.0, 500);
        // A new sample at 1000 (the first is complete), another at 2000.
        s.record(50.0, 1_000);
        s.record(2.0, 2_100);
        assert_eq!(s.samples.len(), 3, "samples + 1 slots are used");
        assert_eq!(s.avg(2_100), 92.0 / 4.0);
        assert_eq!(s.max(2_100), 50.0);
        assert_eq!(s.sum(2_100), 92.0);
    }

    #[test]
    fn roll_over_reuses_the_oldest_slot() {
        let mut s = SampledStat::new(config());
        s.record(100.0, 0); // slot 0, starts at 0
        s.record(1.0, 1_000); // slot 1, starts at 1000
        s.record(1.0, 1_999);
        s.record(2.0, 2_000); // slot 2, starts at 2000
        s.record(3.0, 3_000); // slot 0 again: the 100 is gone
        assert_eq!(s.samples.len(), 3);
        assert_eq!(s.current, 0);
        assert_eq!(s.samples[0].start_ms, 3_000);
        assert_eq!(s.max(3_000), 3.0);
        assert_eq!(s.avg(3_000), 7.0 / 4.0);
    }

    #[test]
    fn a_sample_completes_by_time_not_by_records() {
        let mut s = SampledStat::new(config());
        for t in 0..1_000 {
            s.record(1.0, t);
        }
        assert_eq!(s.samples.len(), 1);
        s.record(1.0, 1_000);
        assert_eq!(s.samples.len(), 2);
        assert_eq!(s.samples[1].start_ms, 1_000);
    }

    #[test]
    fn samples_idle_for_the_whole_window_are_purged() {
        let mut s = SampledStat::new(config());
        s.record(7.0, 0);
        s.record(9.0, 1_500);
        // 2 × 1000 ms after its last event, the first sample is reset; the second stays.
        assert_eq!(s.max(1_999), 9.0);
        assert_eq!(s.avg(1_999), 8.0);
        assert_eq!(s.avg(2_000), 9.0);
        assert_eq!(s.max(2_000), 9.0);
        assert_eq!(s.avg(3_499), 9.0);
        // And then the second: nothing is left, so the value decays to NaN.
        assert!(s.avg(3_500).is_nan());
        assert!(s.max(3_500).is_nan());
        assert_eq!(s.sum(3_500), 0.0);
    }

    #[test]
    fn a_sample_that_started_before_the_window_is_kept_while_it_has_recent_events() {
        let mut s = SampledStat::new(config());
        s.record(1.0, 0);
        s.record(5.0, 999);
        // Started 2500 ms ago, but its last event is within 2 × 1000 ms.
        assert_eq!(s.max(2_500), 5.0);
        assert_eq!(s.sum(2_500), 6.0);
        assert_eq!(s.sum(2_999), 0.0);
    }

    #[test]
    fn purged_samples_start_again_at_the_measurement() {
        let mut s = SampledStat::new(config());
        s.record(1.0, 0);
        assert!(s.avg(5_000).is_nan());
        // The purged sample now starts at 5000, so a record at 5500 goes into it.
        s.record(4.0, 5_500);
        assert_eq!(s.samples.len(), 1);
        assert_eq!(s.samples[0].start_ms, 5_000);
        assert_eq!(s.avg(5_500), 4.0);
    }

    #[test]
    fn rate_of_a_first_partial_window_counts_the_missing_windows() {
        let mut r = Rate::new(config());
        r.record(10.0, 0);
        // 200 ms into the first window: one full window (samples - 1) is assumed before it.
        assert_eq!(r.window_size_ms(200), 1_200);
        assert_eq!(r.measure(200), 10.0 / 1.2);
        r.record(2.0, 500);
        assert_eq!(r.measure(500), 12.0 / 1.5);
    }

    #[test]
    fn rate_over_full_windows_uses_the_oldest_sample_start() {
        let mut r = Rate::new(config());
        for t in [0, 999, 1_000, 1_999, 2_000] {
            r.record(10.0, t);
        }
        // Samples start at 0, 1000 and 2000: 2500 ms elapsed, 50 records.
        assert_eq!(r.window_size_ms(2_500), 2_500);
        assert_eq!(r.measure(2_500), 50.0 / 2.5);
        // The slot that started at 0 is reused at 3000; the oldest now starts at 1000.
        r.record(10.0, 3_000);
        assert_eq!(r.window_size_ms(3_000), 2_000);
        assert_eq!(r.measure(3_000), 40.0 / 2.0);
    }

    #[test]
    fn rate_after_a_quiet_period_decays_and_restarts_as_a_first_window() {
        let mut r = Rate::new(config());
        r.record(100.0, 0);
        assert_eq!(r.measure(1_000), 100.0 / 1.0);
        assert_eq!(r.measure(1_999), 100.0 / 1.999);
        // Purged: nothing in the window, and the reset sample starts now.
        assert_eq!(r.measure(2_000), 0.0);
        assert_eq!(r.window_size_ms(2_000), 1_000);
        r.record(5.0, 2_250);
        assert_eq!(r.measure(2_500), 5.0 / 1.5);
    }

    #[test]
    fn rate_without_records_is_zero() {
        let mut r = Rate::new(config());
        assert_eq!(r.measure(0), 0.0);
        assert_eq!(r.measure(10_000), 0.0);
    }

    #[test]
    fn rate_with_one_sample_and_no_elapsed_time_is_infinite() {
        let mut r = Rate::new(SampleConfig {
            window_ms: 1_000,
            samples: 1,
        });
        r.record(1.0, 0);
        assert_eq!(r.measure(0), f64::INFINITY);
        assert_eq!(r.measure(500), 2.0);
    }

    #[test]
    fn time_ratio_is_the_default_until_an_interval_exists() {
        let mut t = TimeRatio::new(1.0);
        assert_eq!(t.measure(), 1.0);
        // The first record only opens the interval.
        t.record(50.0, 100);
        assert_eq!(t.measure(), 1.0);
    }

    #[test]
    fn time_ratio_measures_since_the_previous_measurement() {
        let mut t = TimeRatio::new(1.0);
        t.record(0.0, 0);
        t.record(10.0, 20);
        assert_eq!(t.measure(), 0.5);
        // The next interval starts at the last record (20).
        t.record(10.0, 30);
        t.record(0.0, 70);
        assert_eq!(t.measure(), 0.2);
        // More recorded than elapsed is capped at 1.
        t.record(100.0, 80);
        assert_eq!(t.measure(), 1.0);
        // No record since: the interval is empty, so the default.
        assert_eq!(t.measure(), 1.0);
    }
}
