//! A histogram cheap enough for every request's path: fixed log-linear buckets of relaxed
//! atomic counters (no lock, no allocation when recording, bounded memory), read as
//! quantiles by the scrape. Kafka's request histograms are Yammer's with an exponentially
//! decaying reservoir (`biased = true`, about the last five minutes); here the scrape takes
//! differences of the cumulative buckets between two points in time instead
//! ([`super::RequestMetrics::write_prometheus`] keeps those points), which gives the
//! quantiles of a recent window without any work on the recording side.
//!
//! Buckets: values below [`SUB_BUCKETS`] exactly, then [`SUB_BUCKETS`] equal buckets per
//! power of two up to 2^[`MAX_EXPONENT`] (larger values land in the last bucket). A
//! quantile is reported as the middle of its bucket, within 1/16 (6.25%) of the true value.

use std::sync::atomic::{AtomicU64, Ordering};

/// log2 of the buckets per power of two.
const SUB_BITS: u32 = 3;
/// Buckets per power of two (and the values counted exactly).
pub const SUB_BUCKETS: u64 = 1 << SUB_BITS;
/// Values of 2^MAX_EXPONENT and more share the last bucket (2^40 µs is 12 days, 2^40 bytes
/// a TiB).
pub const MAX_EXPONENT: u32 = 40;
/// How many buckets a histogram holds.
pub const BUCKETS: usize = ((MAX_EXPONENT - SUB_BITS + 1) as usize) * SUB_BUCKETS as usize;

/// The bucket `value` falls in.
pub fn bucket_of(value: u64) -> usize {
    if value < SUB_BUCKETS {
        return value as usize;
    }
    let exponent = 63 - value.leading_zeros();
    if exponent >= MAX_EXPONENT {
        return BUCKETS - 1;
    }
    let shift = exponent - SUB_BITS;
    let sub = (value >> shift) - SUB_BUCKETS;
    ((exponent - SUB_BITS + 1) as usize) * SUB_BUCKETS as usize + sub as usize
}

/// The smallest and largest value of bucket `index`.
pub fn bucket_bounds(index: usize) -> (u64, u64) {
    let sub_buckets = SUB_BUCKETS as usize;
    if index < sub_buckets {
        return (index as u64, index as u64);
    }
    let exponent = (index / sub_buckets) as u32 - 1 + SUB_BITS;
    let shift = exponent - SUB_BITS;
    let low = (SUB_BUCKETS + (index % sub_buckets) as u64) << shift;
    let high = if index == BUCKETS - 1 {
        u64::MAX
    } else {
        low + (1u64 << shift) - 1
    };
    (low, high)
}

/// The value reported for bucket `index`: its middle (the last, unbounded one: its low end).
fn representative(index: usize) -> u64 {
    let (low, high) = bucket_bounds(index);
    if index == BUCKETS - 1 {
        low
    } else {
        low + (high - low) / 2
    }
}

/// Recorded values, shared by every connection: recording is two relaxed atomic adds.
#[derive(Debug)]
pub struct AtomicHistogram {
    buckets: Box<[AtomicU64]>,
    sum: AtomicU64,
}

impl Default for AtomicHistogram {
    fn default() -> Self {
        Self {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0),
        }
    }
}

impl AtomicHistogram {
    pub fn record(&self, value: u64) {
        self.buckets[bucket_of(value)].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }

    /// The counts so far (each bucket read once; a record racing the read may show in the
    /// count and not yet in the sum, or the reverse, until the next read).
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            buckets: self
                .buckets
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
            sum: self.sum.load(Ordering::Relaxed),
        }
    }
}

/// A histogram's cumulative counts at one time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub buckets: Vec<u64>,
    pub sum: u64,
}

impl Default for Snapshot {
    fn default() -> Self {
        Self {
            buckets: vec![0; BUCKETS],
            sum: 0,
        }
    }
}

impl Snapshot {
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// What was recorded since `earlier` (a snapshot of the same histogram).
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        Snapshot {
            buckets: self
                .buckets
                .iter()
                .zip(&earlier.buckets)
                .map(|(now, then)| now.saturating_sub(*then))
                .collect(),
            sum: self.sum.saturating_sub(earlier.sum),
        }
    }

    /// The `q` quantile (0 ≤ q ≤ 1): the value of the bucket holding the ⌈q·n⌉-th smallest
    /// value; `None` without values.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        let n = self.count();
        if n == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (index, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= rank {
                return Some(representative(index));
            }
        }
        Some(representative(BUCKETS - 1))
    }
}
