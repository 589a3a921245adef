//! Kafka's `TokenBucket` (KIP-599), the measure of the controller mutation quota: credits
//! refill at the quota's rate up to a burst of `samples × window × quota`, each mutation
//! takes its partitions, and the quota is exhausted while the credits are below zero. A
//! windowed rate would keep a burst in its average until the burst's sample expires; the
//! bucket forgives it as fast as the quota refills, so the throttle time is exactly
//! `-credits / quota`.

/// Credits and the time they were last refilled; sans IO (times are handed in, ms).
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    tokens: f64,
    last_update_ms: u64,
}

impl Default for TokenBucket {
    fn default() -> Self {
        TokenBucket::new()
    }
}

impl TokenBucket {
    /// An empty bucket last refilled at time 0, as Kafka's starts: its first refill, at any
    /// real time, fills it to the burst.
    pub fn new() -> TokenBucket {
        TokenBucket {
            tokens: 0.0,
            last_update_ms: 0,
        }
    }

    /// Kafka's burst: `samples × window seconds × quota` credits.
    pub fn burst(quota: f64, samples: usize, window_seconds: u64) -> f64 {
        samples as f64 * window_seconds as f64 * quota
    }

    fn refill(&mut self, quota: f64, burst: f64, now_ms: u64) {
        let elapsed_s = now_ms.saturating_sub(self.last_update_ms) as f64 / 1000.0;
        self.tokens = burst.min(self.tokens + quota * elapsed_s);
        self.last_update_ms = self.last_update_ms.max(now_ms);
    }

    /// The credits at `now_ms` (Kafka's `measure`, which refills).
    pub fn measure(&mut self, quota: f64, burst: f64, now_ms: u64) -> f64 {
        self.refill(quota, burst, now_ms);
        self.tokens
    }

    /// Takes `value` credits at `now_ms` (negative gives them back), never above the burst.
    pub fn record(&mut self, quota: f64, burst: f64, value: f64, now_ms: u64) {
        self.refill(quota, burst, now_ms);
        self.tokens = burst.min(self.tokens - value);
    }

    /// Kafka's `ControllerMutationQuotaManager.throttleTimeMs`: with credits below zero, the
    /// time the quota takes to refill them to zero.
    pub fn throttle_time_ms(tokens: f64, quota: f64) -> u64 {
        if tokens >= 0.0 {
            return 0;
        }
        if quota <= 0.0 {
            return u64::MAX;
        }
        let ms = -tokens / quota * 1000.0;
        if ms >= u64::MAX as f64 {
            u64::MAX
        } else {
            ms.round() as u64
        }
    }
}
