//! Windowed percentiles for the metrics Kafka exports as Yammer histograms and timers
//! (`kafka.controller:type=ControllerEventManager,name=EventQueueTimeMs`,
//! `kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs`, ...), which JMX exporters turn
//! into `50thPercentile`/`99thPercentile` and a `Count`. We export them as Prometheus
//! summaries: `quantile="0.5"`/`"0.99"` over a recent window, plus the cumulative `_count`
//! and `_sum` (so Prometheus computes rates and means itself).
//!
//! The window follows Kafka's `org.apache.kafka.common.metrics.stats.Percentiles` over a
//! `SampledStat` (the same rules as [`super::stats::SampledStat`]: `samples + 1` slots of
//! `window_ms`, a slot idle for `samples × window_ms` is purged), so a quiet metric decays to
//! NaN instead of reporting an old spike forever. Each slot is a histogram with
//! logarithmic buckets (8% wide from 1 µs to about three hours), so memory is fixed and a
//! quantile is within a few percent of the true value whatever the spread; an estimate is
//! clamped to the smallest and largest value in the window. Time comes in as arguments, as in
//! `stats.rs`.

use super::stats::SampleConfig;

/// The lower edge of the first logarithmic bucket, in the recorded unit (ms): smaller
/// values, zero and negatives go to bucket 0.
const MIN_VALUE: f64 = 0.001;
/// Each bucket's upper edge over its lower one.
const GROWTH: f64 = 1.08;
/// Bucket count: bucket 0 below [`MIN_VALUE`], then `MIN_VALUE × GROWTH^i` up to ~1e7 ms;
/// larger values go to the last bucket.
const BUCKETS: usize = 300;

/// Kafka's `Percentiles` (windowed) plus the cumulative count and sum of a Prometheus
/// summary.
#[derive(Debug, Clone)]
pub struct Percentiles {
    config: SampleConfig,
    samples: Vec<HistogramSample>,
    current: usize,
    total_count: u64,
    total_sum: f64,
}

#[derive(Debug, Clone)]
struct HistogramSample {
    counts: Vec<u32>,
    event_count: u64,
    min: f64,
    max: f64,
    start_ms: u64,
    last_event_ms: u64,
}

/// What a summary exports at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SummarySnapshot {
    /// The median over the window; NaN without events in it.
    pub p50: f64,
    /// The 99th percentile over the window; NaN without events in it.
    pub p99: f64,
    /// Every value ever recorded.
    pub count: u64,
    /// Their sum.
    pub sum: f64,
}

impl HistogramSample {
    fn new(now_ms: u64) -> Self {
        HistogramSample {
            counts: Vec::new(),
            event_count: 0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            start_ms: now_ms,
            last_event_ms: now_ms,
        }
    }
}

fn bucket_of(value: f64) -> usize {
    if value.is_nan() || value < MIN_VALUE {
        return 0;
    }
    let i = 1 + ((value / MIN_VALUE).ln() / GROWTH.ln()).floor() as usize;
    i.min(BUCKETS - 1)
}

/// The value a bucket stands for: the geometric middle of its edges (0 for bucket 0).
fn bucket_value(i: usize) -> f64 {
    if i == 0 {
        return 0.0;
    }
    let lower = MIN_VALUE * GROWTH.powi(i as i32 - 1);
    lower * GROWTH.sqrt()
}

impl Default for Percentiles {
    fn default() -> Self {
        Percentiles::new(SampleConfig::default())
    }
}

impl Percentiles {
    pub fn new(config: SampleConfig) -> Self {
        assert!(config.window_ms > 0 && config.samples > 0);
        Percentiles {
            config,
            samples: Vec::with_capacity(config.samples + 1),
            current: 0,
            total_count: 0,
            total_sum: 0.0,
        }
    }

    /// Records `value` at `time_ms` (Kafka's `SampledStat::record`); NaN is ignored.
    pub fn record(&mut self, value: f64, time_ms: u64) {
        if value.is_nan() {
            return;
        }
        if self.samples.is_empty() {
            self.samples.push(HistogramSample::new(time_ms));
        }
        if time_ms.saturating_sub(self.samples[self.current].start_ms) >= self.config.window_ms {
            let slots = self.config.samples + 1;
            self.current = (self.current + 1) % slots;
            if self.current >= self.samples.len() {
                self.samples.push(HistogramSample::new(time_ms));
            } else {
                self.samples[self.current] = HistogramSample::new(time_ms);
            }
        }
        let sample = &mut self.samples[self.current];
        if sample.counts.is_empty() {
            sample.counts = vec![0; BUCKETS];
        }
        let b = bucket_of(value);
        sample.counts[b] = sample.counts[b].saturating_add(1);
        sample.event_count += 1;
        sample.min = sample.min.min(value);
        sample.max = sample.max.max(value);
        sample.last_event_ms = time_ms;
        self.total_count += 1;
        if value.is_finite() {
            self.total_sum += value;
        }
    }

    /// The `q` quantile (0..=1) of the values in the window as of `now_ms`; NaN without any.
    pub fn quantile(&mut self, q: f64, now_ms: u64) -> f64 {
        self.purge(now_ms);
        let n: u64 = self.samples.iter().map(|s| s.event_count).sum();
        if n == 0 {
            return f64::NAN;
        }
        let min = self
            .samples
            .iter()
            .map(|s| s.min)
            .fold(f64::INFINITY, f64::min);
        let max = self
            .samples
            .iter()
            .map(|s| s.max)
            .fold(f64::NEG_INFINITY, f64::max);
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0u64;
        for b in 0..BUCKETS {
            seen += self
                .samples
                .iter()
                .filter(|s| !s.counts.is_empty())
                .map(|s| u64::from(s.counts[b]))
                .sum::<u64>();
            if seen >= rank {
                return bucket_value(b).clamp(min, max);
            }
        }
        max
    }

    /// p50, p99 over the window and the cumulative count and sum.
    pub fn snapshot(&mut self, now_ms: u64) -> SummarySnapshot {
        SummarySnapshot {
            p50: self.quantile(0.5, now_ms),
            p99: self.quantile(0.99, now_ms),
            count: self.total_count,
            sum: self.total_sum,
        }
    }

    /// Resets the slots whose last event is `samples × window_ms` or more before `now_ms`.
    fn purge(&mut self, now_ms: u64) {
        let expire_ms = self.config.samples as u64 * self.config.window_ms;
        for s in &mut self.samples {
            if now_ms.saturating_sub(s.last_event_ms) >= expire_ms {
                *s = HistogramSample::new(now_ms);
            }
        }
    }
}

impl SummarySnapshot {
    /// Prometheus text of one summary series: the `quantile="0.5"`/`"0.99"` lines, `_sum`
    /// and `_count`. `labels` are the series' labels without braces (`node="1"` and any
    /// more); HELP and TYPE lines are the caller's ([`write_summary_header`]), once per name.
    pub fn write_series(&self, out: &mut String, name: &str, labels: &str) {
        use std::fmt::Write;
        for (q, v) in [("0.5", self.p50), ("0.99", self.p99)] {
            let _ = writeln!(out, "{name}{{{labels},quantile=\"{q}\"}} {v}");
        }
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }

    /// A whole summary with one series labelled by the node only.
    pub fn write_prometheus(&self, out: &mut String, name: &str, help: &str, node_id: i32) {
        write_summary_header(out, name, help);
        self.write_series(out, name, &format!("node=\"{node_id}\""));
    }
}

/// The HELP and TYPE lines of a summary.
pub fn write_summary_header(out: &mut String, name: &str, help: &str) {
    use std::fmt::Write;
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} summary");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SampleConfig {
        SampleConfig {
            window_ms: 1_000,
            samples: 2,
        }
    }

    #[test]
    fn empty_window_reads_nan() {
        let mut p = Percentiles::new(config());
        let s = p.snapshot(0);
        assert!(s.p50.is_nan() && s.p99.is_nan());
        assert_eq!((s.count, s.sum), (0, 0.0));
    }

    #[test]
    fn quantiles_are_within_the_bucket_width() {
        let mut p = Percentiles::new(config());
        for v in 1..=1000 {
            p.record(v as f64, 10);
        }
        let s = p.snapshot(10);
        assert!((s.p50 - 500.0).abs() / 500.0 < 0.05, "p50 {}", s.p50);
        assert!((s.p99 - 990.0).abs() / 990.0 < 0.05, "p99 {}", s.p99);
        assert_eq!(s.count, 1000);
        assert_eq!(s.sum, 500_500.0);
    }

    #[test]
    fn a_single_value_reads_exactly() {
        let mut p = Percentiles::new(config());
        p.record(7.25, 0);
        let s = p.snapshot(0);
        assert_eq!((s.p50, s.p99), (7.25, 7.25));
        p.record(0.0, 1);
        assert_eq!(p.quantile(0.5, 1), 0.0);
        assert_eq!(p.quantile(0.99, 1), 7.25);
    }

    #[test]
    fn quiet_windows_decay_but_the_totals_stay() {
        let mut p = Percentiles::new(config());
        p.record(100.0, 0);
        p.record(3.0, 1_500);
        // The first slot is purged 2 windows after its last event, the second later.
        // Within the bucket's width of the value (the estimate is the bucket's middle).
        let p99 = p.quantile(0.99, 1_999);
        assert!((p99 - 100.0).abs() < 100.0 * 0.04, "{p99}");
        // Alone in the window, 3 is also its minimum: the estimate is clamped to it.
        assert_eq!(p.quantile(0.99, 2_000), 3.0);
        let s = p.snapshot(3_500);
        assert!(s.p99.is_nan());
        assert_eq!((s.count, s.sum), (2, 103.0));
    }

    #[test]
    fn slots_roll_over() {
        let mut p = Percentiles::new(config());
        p.record(1_000.0, 0);
        p.record(1.0, 1_000);
        p.record(1.0, 2_000);
        // The slot that held 1000 is reused at 3000.
        p.record(1.0, 3_000);
        assert_eq!(p.quantile(1.0, 3_000), 1.0);
        assert_eq!(p.samples.len(), 3);
    }

    #[test]
    fn prometheus_series() {
        let s = SummarySnapshot {
            p50: 1.5,
            p99: f64::NAN,
            count: 3,
            sum: 4.5,
        };
        let mut out = String::new();
        s.write_prometheus(&mut out, "kafka_x_Y_Z", "help", 2);
        assert_eq!(
            out,
            "# HELP kafka_x_Y_Z help\n# TYPE kafka_x_Y_Z summary\n\
             kafka_x_Y_Z{node=\"2\",quantile=\"0.5\"} 1.5\n\
             kafka_x_Y_Z{node=\"2\",quantile=\"0.99\"} NaN\n\
             kafka_x_Y_Z_sum{node=\"2\"} 4.5\nkafka_x_Y_Z_count{node=\"2\"} 3\n"
        );
    }
}
