//! Kafka's `ControllerMutationQuotaManager` (KIP-599): `controller_mutation_rate` limits the
//! partitions a user / client id creates or deletes per second (CreateTopics, DeleteTopics,
//! CreatePartitions), measured by a [`TokenBucket`] per quota sensor (tags from
//! [`QuotaIndex::metric_tags`](super::QuotaIndex::metric_tags)).
//!
//! Each request gets a [`ControllerMutationQuota`]: strict for the versions whose clients
//! know THROTTLING_QUOTA_EXCEEDED (CreateTopics v6+, DeleteTopics v5+, CreatePartitions v3+):
//! a topic is refused once the bucket is below zero, and the ones charged before it went
//! through even if they took it below; permissive for older versions: every topic goes
//! through and the client is throttled afterwards. Either way the response carries the
//! throttle time and the client is muted for it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kraftd_raft::driver::stats::{Rate, SampleConfig, SampledStat};

use super::{
    write_quota_metric, MutationQuota, QuotaKind, QuotaTags, QuotaWindow, ThrottlingQuotaExceeded,
    TokenBucket,
};
use crate::publisher::ClientQuotas;

/// Kafka drops a client's sensors after an hour without use.
pub const INACTIVE_SENSOR_EXPIRATION_MS: u64 = 3_600_000;
/// How often idle sensors are looked for.
const PURGE_INTERVAL_MS: u64 = 60_000;

/// A clock in milliseconds.
type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// The controller's mutation quotas; cheap to clone.
#[derive(Clone)]
pub struct ControllerMutationQuotaManager {
    inner: Arc<Inner>,
}

struct Inner {
    quotas: ClientQuotas,
    window: QuotaWindow,
    clock: Clock,
    sensors: Mutex<Sensors>,
}

#[derive(Default)]
struct Sensors {
    by_tags: HashMap<QuotaTags, Sensor>,
    last_purge_ms: u64,
}

/// One user / client id's measures: the bucket enforced, the mutation rate and the average
/// throttle time reported.
struct Sensor {
    bucket: TokenBucket,
    rate: Rate,
    throttle: SampledStat,
    last_used_ms: u64,
}

impl std::fmt::Debug for ControllerMutationQuotaManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerMutationQuotaManager")
            .field("window", &self.inner.window)
            .finish_non_exhaustive()
    }
}

impl ControllerMutationQuotaManager {
    /// Quotas from `quotas`, sampled per `window` (`controller.quota.window.*`), on the
    /// wall clock.
    pub fn new(quotas: ClientQuotas, window: QuotaWindow) -> Self {
        Self::with_clock(
            quotas,
            window,
            Arc::new(|| u64::try_from(kraftd_log::clock::unix_ms()).unwrap_or(0)),
        )
    }

    /// As [`new`](Self::new) with the time read from `clock` (tests).
    pub fn with_clock(
        quotas: ClientQuotas,
        window: QuotaWindow,
        clock: Arc<dyn Fn() -> u64 + Send + Sync>,
    ) -> Self {
        ControllerMutationQuotaManager {
            inner: Arc::new(Inner {
                quotas,
                window,
                clock,
                sensors: Mutex::new(Sensors::default()),
            }),
        }
    }

    /// Kafka's `newQuotaFor(session, header, strictSinceVersion)`: the quota of one request
    /// from `user` with `client_id`; unbounded while no mutation quota exists anywhere.
    pub fn quota_for(&self, user: &str, client_id: &str, strict: bool) -> ControllerMutationQuota {
        if !self.inner.quotas.enabled(QuotaKind::ControllerMutation) {
            return ControllerMutationQuota::unbounded();
        }
        let tags =
            self.inner
                .quotas
                .index()
                .metric_tags(QuotaKind::ControllerMutation, user, client_id);
        ControllerMutationQuota {
            state: Some(Arc::new(QuotaState {
                manager: Arc::clone(&self.inner),
                tags,
                strict,
                last: Mutex::new(LastThrottle::default()),
            })),
        }
    }

    /// Kafka's `throttle`: the throttle time a response reports, into the `throttle-time`
    /// average of the request's sensor.
    pub fn record_throttle(&self, quota: &ControllerMutationQuota, ms: u64) {
        let Some(state) = &quota.state else { return };
        if ms == 0 {
            return;
        }
        let now = (self.inner.clock)();
        self.inner
            .with_sensor(&state.tags, now, |s| s.throttle.record(ms as f64, now));
    }

    /// `kafka_server_ControllerMutation_{mutation_rate,tokens,throttle_time}` per user and
    /// client id, in Prometheus text.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let now = (self.inner.clock)();
        let index = self.inner.quotas.index();
        let burst_of = |quota: f64| {
            TokenBucket::burst(
                quota,
                self.inner.window.samples,
                self.inner.window.size_seconds,
            )
        };
        let mut rates = Vec::new();
        let mut tokens = Vec::new();
        let mut throttles = Vec::new();
        {
            let mut sensors = self.inner.lock();
            for (tags, sensor) in sensors.by_tags.iter_mut() {
                rates.push((tags.clone(), sensor.rate.measure(now)));
                if let Some(quota) = index.limit(QuotaKind::ControllerMutation, tags) {
                    tokens.push((
                        tags.clone(),
                        sensor.bucket.measure(quota, burst_of(quota), now),
                    ));
                }
                throttles.push((tags.clone(), sensor.throttle.avg(now)));
            }
        }
        let kind = QuotaKind::ControllerMutation;
        write_quota_metric(
            out,
            kind,
            "mutation_rate",
            "Tracking mutation-rate per user/client-id",
            node_id,
            &mut rates,
        );
        write_quota_metric(
            out,
            kind,
            "tokens",
            "Tracking remaining tokens in the token bucket per user/client-id",
            node_id,
            &mut tokens,
        );
        write_quota_metric(
            out,
            kind,
            "throttle_time",
            "Tracking average throttle-time per user/client-id",
            node_id,
            &mut throttles,
        );
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, Sensors> {
        self.sensors.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with_sensor<R>(&self, tags: &QuotaTags, now: u64, f: impl FnOnce(&mut Sensor) -> R) -> R {
        let mut sensors = self.lock();
        if now.saturating_sub(sensors.last_purge_ms) >= PURGE_INTERVAL_MS {
            sensors.last_purge_ms = now;
            sensors
                .by_tags
                .retain(|_, s| now.saturating_sub(s.last_used_ms) < INACTIVE_SENSOR_EXPIRATION_MS);
        }
        let config = self.window.sample_config();
        let sensor = sensors
            .by_tags
            .entry(tags.clone())
            .or_insert_with(|| Sensor {
                bucket: TokenBucket::new(),
                rate: Rate::new(config),
                throttle: SampledStat::new(SampleConfig::default()),
                last_used_ms: now,
            });
        sensor.last_used_ms = now;
        f(sensor)
    }
}

/// The quota one mutation request is charged against; clones share it (the event loop
/// charges it, the listener reads the throttle time afterwards).
#[derive(Clone, Default)]
pub struct ControllerMutationQuota {
    /// `None`: unbounded.
    state: Option<Arc<QuotaState>>,
}

struct QuotaState {
    manager: Arc<Inner>,
    tags: QuotaTags,
    strict: bool,
    last: Mutex<LastThrottle>,
}

/// Kafka's `AbstractControllerMutationQuota` state: the last throttle time and when.
#[derive(Debug, Default, Clone, Copy)]
struct LastThrottle {
    throttle_ms: u64,
    recorded_ms: u64,
}

impl std::fmt::Debug for ControllerMutationQuota {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.state {
            None => f.write_str("ControllerMutationQuota(unbounded)"),
            Some(s) => f
                .debug_struct("ControllerMutationQuota")
                .field("tags", &s.tags)
                .field("strict", &s.strict)
                .finish(),
        }
    }
}

impl ControllerMutationQuota {
    /// Accepts everything and never throttles.
    pub fn unbounded() -> Self {
        ControllerMutationQuota { state: None }
    }

    /// The sensor's tags, `None` when unbounded.
    pub fn tags(&self) -> Option<&QuotaTags> {
        self.state.as_ref().map(|s| &s.tags)
    }

    /// Charges `permits` partitions at `now_ms`. Strict: refused (with the time until the
    /// bucket is back at zero) when the bucket is already below zero, else taken even if
    /// that takes it below. Permissive: always taken; the throttle time is remembered.
    pub fn record_at(&self, permits: f64, now_ms: u64) -> Result<(), ThrottlingQuotaExceeded> {
        let Some(state) = &self.state else {
            return Ok(());
        };
        let manager = &state.manager;
        let limit = manager
            .quotas
            .index()
            .limit(QuotaKind::ControllerMutation, &state.tags);
        let window = manager.window;
        let outcome = manager.with_sensor(&state.tags, now_ms, |sensor| {
            let Some(quota) = limit else {
                sensor.rate.record(permits, now_ms);
                return Ok(());
            };
            let burst = TokenBucket::burst(quota, window.samples, window.size_seconds);
            if state.strict {
                let tokens = sensor.bucket.measure(quota, burst, now_ms);
                if tokens < 0.0 {
                    return Err(TokenBucket::throttle_time_ms(tokens, quota));
                }
                sensor.bucket.record(quota, burst, permits, now_ms);
                sensor.rate.record(permits, now_ms);
                Ok(())
            } else {
                sensor.bucket.record(quota, burst, permits, now_ms);
                sensor.rate.record(permits, now_ms);
                let tokens = sensor.bucket.measure(quota, burst, now_ms);
                if tokens < 0.0 {
                    // Accepted, but the client waits.
                    return Err(TokenBucket::throttle_time_ms(tokens, quota));
                }
                Ok(())
            }
        });
        match outcome {
            Ok(()) => Ok(()),
            Err(throttle_ms) => {
                *state.last.lock().unwrap_or_else(PoisonError::into_inner) = LastThrottle {
                    throttle_ms,
                    recorded_ms: now_ms,
                };
                if state.strict {
                    Err(ThrottlingQuotaExceeded {
                        throttle_time_ms: throttle_ms,
                    })
                } else {
                    Ok(())
                }
            }
        }
    }

    /// Kafka's `throttleTime()`: what remains at `now_ms` of the last throttle time.
    pub fn throttle_time_at(&self, now_ms: u64) -> u64 {
        let Some(state) = &self.state else { return 0 };
        let last = *state.last.lock().unwrap_or_else(PoisonError::into_inner);
        last.throttle_ms
            .saturating_sub(now_ms.saturating_sub(last.recorded_ms))
    }

    /// What remains now of the last throttle time.
    pub fn throttle_time_ms(&self) -> u64 {
        match &self.state {
            None => 0,
            Some(state) => self.throttle_time_at((state.manager.clock)()),
        }
    }
}

impl MutationQuota for ControllerMutationQuota {
    fn record(&mut self, partitions: u32) -> Result<(), ThrottlingQuotaExceeded> {
        let now = match &self.state {
            None => return Ok(()),
            Some(state) => (state.manager.clock)(),
        };
        self.record_at(f64::from(partitions), now)
    }
}
