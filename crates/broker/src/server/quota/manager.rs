//! Kafka's `ClientQuotaManager` (and, bounded, `ClientRequestQuotaManager`): per quota
//! sensor (user / client id tags from the quota index) a windowed [`Rate`] with Kafka's
//! semantics (`quota.window.num` samples of `quota.window.size.seconds`), recorded on each
//! request and checked against the limit: over it, the client is throttled for the time the
//! rate takes to come back to the limit, `QuotaUtils.throttleTime`.
//!
//! Sans IO: every call takes the time in milliseconds. While no quota of the manager's kind
//! exists, nothing is recorded and no sensor is created (Kafka's `quotasEnabled`).

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use kraftd_controller::publisher::ClientQuotas;
use kraftd_controller::quota::{
    throttle_time, write_quota_metric, QuotaKind, QuotaTags, QuotaWindow,
};
use kraftd_raft::driver::stats::{Rate, SampleConfig, SampledStat};

/// Kafka drops a client's sensors after an hour without use.
pub const INACTIVE_SENSOR_EXPIRATION_MS: u64 = 3_600_000;
/// How often idle sensors are looked for.
const PURGE_INTERVAL_MS: u64 = 60_000;

/// One quota kind's sensors.
#[derive(Debug)]
pub struct ClientQuotaManager {
    kind: QuotaKind,
    window: QuotaWindow,
    quotas: ClientQuotas,
    /// The request quota's cap on a throttle time (one window); none for bandwidth.
    max_throttle_ms: Option<u64>,
    sensors: Mutex<Sensors>,
}

#[derive(Debug, Default)]
struct Sensors {
    by_tags: HashMap<QuotaTags, Sensor>,
    last_purge_ms: u64,
}

/// Kafka's `ClientSensors`: the rate enforced and the throttle times reported.
#[derive(Debug)]
struct Sensor {
    rate: Rate,
    throttle: SampledStat,
    last_used_ms: u64,
}

impl ClientQuotaManager {
    /// A bandwidth manager (`producer_byte_rate`, `consumer_byte_rate`).
    pub fn new(kind: QuotaKind, window: QuotaWindow, quotas: ClientQuotas) -> Self {
        ClientQuotaManager {
            kind,
            window,
            quotas,
            max_throttle_ms: None,
            sensors: Mutex::new(Sensors::default()),
        }
    }

    /// Kafka's `ClientRequestQuotaManager`: `request_percentage`, its throttle times capped
    /// at one window (`QuotaUtils.boundedThrottleTime`).
    pub fn request(window: QuotaWindow, quotas: ClientQuotas) -> Self {
        ClientQuotaManager {
            max_throttle_ms: Some(window.window_ms()),
            ..Self::new(QuotaKind::Request, window, quotas)
        }
    }

    pub fn kind(&self) -> QuotaKind {
        self.kind
    }

    /// Kafka's `quotasEnabled`: some entity holds a quota of this kind.
    pub fn enabled(&self) -> bool {
        self.quotas.enabled(self.kind)
    }

    fn lock(&self) -> MutexGuard<'_, Sensors> {
        self.sensors.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on the sensor of `tags`, created if needed; idle sensors go now and then.
    fn with_sensor<R>(&self, tags: QuotaTags, now_ms: u64, f: impl FnOnce(&mut Sensor) -> R) -> R {
        let mut sensors = self.lock();
        if now_ms.saturating_sub(sensors.last_purge_ms) >= PURGE_INTERVAL_MS {
            sensors.last_purge_ms = now_ms;
            sensors.by_tags.retain(|_, s| {
                now_ms.saturating_sub(s.last_used_ms) < INACTIVE_SENSOR_EXPIRATION_MS
            });
        }
        let config = self.window.sample_config();
        let sensor = sensors.by_tags.entry(tags).or_insert_with(|| Sensor {
            rate: Rate::new(config),
            throttle: SampledStat::new(SampleConfig::default()),
            last_used_ms: now_ms,
        });
        sensor.last_used_ms = now_ms;
        f(sensor)
    }

    /// Kafka's `maybeRecordAndGetThrottleTimeMs`: records `value` for `user` with
    /// `client_id` at `now_ms` and returns how long to throttle them (0 within the quota,
    /// or when no quota of this kind exists anywhere).
    pub fn record_and_get_throttle_time_ms(
        &self,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: u64,
    ) -> u64 {
        if !self.enabled() {
            return 0;
        }
        let (tags, limit) = self.quotas.index().resolve(self.kind, user, client_id);
        let max = self.max_throttle_ms;
        self.with_sensor(tags, now_ms, |sensor| {
            sensor.rate.record(value, now_ms);
            let Some(quota) = limit else { return 0 };
            let rate = sensor.rate.measure(now_ms);
            if rate <= quota {
                return 0;
            }
            let throttle = throttle_time(rate, quota, sensor.rate.window_size_ms(now_ms));
            max.map_or(throttle, |m| throttle.min(m))
        })
    }

    /// Kafka's `recordNoThrottle`: counts `value` without checking the quota.
    pub fn record_no_throttle(&self, user: &str, client_id: &str, value: f64, now_ms: u64) {
        if !self.enabled() {
            return;
        }
        let tags = self.quotas.index().metric_tags(self.kind, user, client_id);
        self.with_sensor(tags, now_ms, |sensor| sensor.rate.record(value, now_ms));
    }

    /// Kafka's `unrecordQuotaSensor`: takes back a value recorded for a request answered
    /// empty because it was throttled (a consumer's fetch).
    pub fn unrecord(&self, user: &str, client_id: &str, value: f64, now_ms: u64) {
        self.record_no_throttle(user, client_id, -value, now_ms);
    }

    /// Kafka's `getMaxValueInQuotaWindow`: the most a client could take at once without
    /// being throttled for sure, `limit × (samples - 1) × window`; unlimited without a quota.
    pub fn max_value_in_quota_window(&self, user: &str, client_id: &str) -> f64 {
        if !self.enabled() {
            return f64::MAX;
        }
        match self.quotas.index().resolve(self.kind, user, client_id).1 {
            Some(limit) => {
                limit
                    * (self.window.samples.saturating_sub(1)) as f64
                    * self.window.size_seconds as f64
            }
            None => f64::MAX,
        }
    }

    /// Kafka's `throttle`: a throttle time the client was told, into its sensor's
    /// `throttle-time` average.
    pub fn record_throttle(&self, user: &str, client_id: &str, throttle_ms: u64, now_ms: u64) {
        if throttle_ms == 0 || !self.enabled() {
            return;
        }
        let tags = self.quotas.index().metric_tags(self.kind, user, client_id);
        self.with_sensor(tags, now_ms, |sensor| {
            sensor.throttle.record(throttle_ms as f64, now_ms)
        });
    }

    /// The rate a sensor measures now (tests, the metrics).
    pub fn rate(&self, tags: &QuotaTags, now_ms: u64) -> Option<f64> {
        self.lock()
            .by_tags
            .get_mut(tags)
            .map(|s| s.rate.measure(now_ms))
    }

    /// `kafka_server_<Type>_{byte_rate|request_time}` and `..._throttle_time` per user and
    /// client id, as Kafka's `byte-rate` / `request-time` and `throttle-time`.
    pub fn write_prometheus(&self, node_id: i32, now_ms: u64, out: &mut String) {
        let mut rates = Vec::new();
        let mut throttles = Vec::new();
        for (tags, sensor) in self.lock().by_tags.iter_mut() {
            rates.push((tags.clone(), sensor.rate.measure(now_ms)));
            throttles.push((tags.clone(), sensor.throttle.avg(now_ms)));
        }
        let (metric, help) = match self.kind {
            QuotaKind::Request => ("request_time", "Tracking request-time per user/client-id"),
            _ => ("byte_rate", "Tracking byte-rate per user/client-id"),
        };
        write_quota_metric(out, self.kind, metric, help, node_id, &mut rates);
        write_quota_metric(
            out,
            self.kind,
            "throttle_time",
            "Tracking average throttle-time per user/client-id",
            node_id,
            &mut throttles,
        );
    }
}
