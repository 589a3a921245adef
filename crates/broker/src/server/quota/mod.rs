//! Client quotas on the broker, as Kafka's `QuotaFactory.QuotaManagers`: `producer_byte_rate`
//! (the bytes of each Produce request), `consumer_byte_rate` (the bytes of each consumer
//! Fetch response) and `request_percentage` (the time spent handling a user's / client id's
//! requests, as a percentage of one thread), from the metadata image's client quotas (the
//! [`ClientQuotas`] handle, published on every committed change). `controller_mutation_rate`
//! is the controller's (`kraftd_controller::quota::mutation`); a forwarded request's
//! throttle time comes back in its response and mutes the client here.
//!
//! Each request of a listener gets a [`RequestQuota`] (none at all while no client quota
//! exists: the produce path then pays one atomic load). A client over a quota is throttled
//! as KIP-219 says: its response carries `throttle_time_ms` and its connection is muted for
//! that long (`ChannelMute`: nothing more is read from it); for a request version whose
//! clients do not throttle themselves the response itself is also held back that long.
//! When bandwidth and request time both throttle, the longer wins, and its manager records
//! the throttle time, as Kafka's `handleProduceRequest` does.
//!
//! Differences from Kafka: request time is the time the handler's future spent being
//! polled (its own work, not its waits: Kafka's request-thread time), and a Fetch throttled
//! only for its request time is not emptied (its bytes are decided before its handling time
//! is known); requests a broker forwards are not charged request time here, as Kafka's are
//! not (the controller's throttle time applies).

mod manager;
#[cfg(test)]
mod tests;

pub use manager::ClientQuotaManager;

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kraftd_controller::publisher::ClientQuotas;
use kraftd_controller::quota::{
    client_throttles, set_throttle_time_ms, throttle_ms_i32, throttle_time_ms, QuotaKind,
    QuotaWindow,
};
use kraftd_net::{ChannelMute, InboundRequest};
use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};

/// Kafka's `NANOS_TO_PERCENTAGE_PER_SECOND`: a request's handling nanoseconds as the
/// percentage of one thread it took over one second.
const NANOS_TO_PERCENTAGE: f64 = 100.0 / 1_000_000_000.0;

/// The broker's client quota managers.
#[derive(Debug)]
pub struct QuotaManagers {
    pub produce: ClientQuotaManager,
    pub fetch: ClientQuotaManager,
    pub request: ClientQuotaManager,
    quotas: ClientQuotas,
}

impl QuotaManagers {
    /// Managers over `quotas`, sampled per `window` (`quota.window.*`).
    pub fn new(quotas: ClientQuotas, window: QuotaWindow) -> Self {
        QuotaManagers {
            produce: ClientQuotaManager::new(QuotaKind::Produce, window, quotas.clone()),
            fetch: ClientQuotaManager::new(QuotaKind::Fetch, window, quotas.clone()),
            request: ClientQuotaManager::request(window, quotas.clone()),
            quotas,
        }
    }

    /// The quota of one request; `None` while no client quota exists anywhere.
    pub fn begin(self: &Arc<Self>, request: &InboundRequest) -> Option<RequestQuota> {
        if !self.quotas.any_enabled() {
            return None;
        }
        let follower_fetch = matches!(&request.body, RequestBody::Fetch(f)
            if (if request.header.request_api_version >= 15 {
                f.replica_state.replica_id
            } else {
                f.replica_id
            }) >= 0);
        Some(RequestQuota {
            managers: Arc::clone(self),
            user: request.session.principal.name.clone(),
            client_id: request.header.client_id.clone().unwrap_or_default(),
            api: request.api_key,
            version: request.header.request_api_version,
            mute: request.mute.clone(),
            bandwidth_ms: 0,
            bandwidth_kind: QuotaKind::Produce,
            // Kafka's `sendResponseExemptThrottle`: replication and inter-broker work.
            exempt: follower_fetch || request.api_key == ApiKey::WriteTxnMarkers,
            forwarded: super::api_keys::FORWARDED_API_KEYS.contains(&request.api_key)
                || request.api_key == ApiKey::DescribeQuorum,
            busy_nanos: Arc::new(AtomicU64::new(0)),
        })
    }

    /// Every sensor's rate and throttle time, in Prometheus text.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let now = now_ms();
        self.produce.write_prometheus(node_id, now, out);
        self.fetch.write_prometheus(node_id, now, out);
        self.request.write_prometheus(node_id, now, out);
    }
}

/// The wall clock in milliseconds, as the quota sensors take it.
fn now_ms() -> u64 {
    u64::try_from(kraftd_log::clock::unix_ms()).unwrap_or(0)
}

/// The quotas one request is charged to, from its arrival to its response.
#[derive(Debug)]
pub struct RequestQuota {
    managers: Arc<QuotaManagers>,
    user: String,
    client_id: String,
    api: ApiKey,
    version: i16,
    mute: ChannelMute,
    /// The bandwidth throttle decided (Produce, Fetch) and whose it is.
    bandwidth_ms: u64,
    bandwidth_kind: QuotaKind,
    /// Not charged request time (follower fetches, transaction markers).
    exempt: bool,
    /// Forwarded to the controller: its response's throttle time applies.
    forwarded: bool,
    /// Time spent handling the request (polled, not waiting).
    busy_nanos: Arc<AtomicU64>,
}

/// A request's handling time, counted while its handler is polled.
#[derive(Debug, Clone)]
pub struct HandlingTime(Arc<AtomicU64>);

impl HandlingTime {
    /// `future`, with the time it spends being polled counted as handling time.
    pub fn timed<F: Future>(&self, future: F) -> impl Future<Output = F::Output> {
        let busy = Arc::clone(&self.0);
        let mut future = Box::pin(future);
        std::future::poll_fn(move |cx| {
            let start = Instant::now();
            let polled = future.as_mut().poll(cx);
            let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            busy.fetch_add(nanos, Ordering::Relaxed);
            polled
        })
    }
}

/// What a consumer's fetch is charged to (Kafka's `quotas.fetch` in `handleFetchRequest`).
pub trait ConsumerFetchQuota {
    /// The most bytes a response may carry (Kafka's `getMaxValueInQuotaWindow`).
    fn max_bytes(&self) -> usize;
    /// Records a response of `bytes`; the throttle time, 0 to send it as it is. A throttled
    /// response is not sent, so its bytes are taken back.
    fn record(&mut self, bytes: usize) -> u64;
}

impl RequestQuota {
    /// Charges a Produce request of `bytes` (Kafka's `request.sizeInBytes`) and mutes the
    /// connection at once when it goes over the quota, before its next request is read.
    pub fn record_produce(&mut self, bytes: usize) -> u64 {
        let throttle = self.managers.produce.record_and_get_throttle_time_ms(
            &self.user,
            &self.client_id,
            bytes as f64,
            now_ms(),
        );
        self.set_bandwidth(QuotaKind::Produce, throttle);
        throttle
    }

    fn set_bandwidth(&mut self, kind: QuotaKind, throttle_ms: u64) {
        if throttle_ms > 0 {
            self.bandwidth_ms = throttle_ms;
            self.bandwidth_kind = kind;
            self.mute.mute_for(Duration::from_millis(throttle_ms));
        }
    }

    /// Adds handling time spent outside [`timed`](Self::timed).
    pub fn add_busy(&self, elapsed: Duration) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.busy_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// The request's handling-time counter, for [`HandlingTime::timed`].
    pub fn handling_time(&self) -> HandlingTime {
        HandlingTime(Arc::clone(&self.busy_nanos))
    }

    /// Ends the request: charges its handling time to the request quota (none for an
    /// exempt or forwarded request, or one whose client reads no response), takes the
    /// longest throttle time (a forwarded response's own included), records it on the
    /// manager that decided it, mutes the connection for it and sets it in `response`.
    /// Returns how long to hold the response back: the throttle time when the request's
    /// version predates KIP-219, else zero.
    pub fn finish(self, response: Option<&mut ResponseBody>) -> Duration {
        let now = now_ms();
        let charged = response.is_some() && !self.exempt && !self.forwarded;
        let request_ms = if charged {
            let busy = self.busy_nanos.load(Ordering::Relaxed) as f64;
            self.managers.request.record_and_get_throttle_time_ms(
                &self.user,
                &self.client_id,
                busy * NANOS_TO_PERCENTAGE,
                now,
            )
        } else {
            0
        };
        let forwarded_ms = match (&response, self.forwarded) {
            (Some(r), true) => u64::try_from(throttle_time_ms(r, self.version)).unwrap_or(0),
            _ => 0,
        };
        let throttle_ms = self.bandwidth_ms.max(request_ms).max(forwarded_ms);
        if throttle_ms == 0 {
            return Duration::ZERO;
        }
        let manager = if self.bandwidth_ms > request_ms.max(forwarded_ms) {
            match self.bandwidth_kind {
                QuotaKind::Fetch => &self.managers.fetch,
                _ => &self.managers.produce,
            }
        } else {
            &self.managers.request
        };
        manager.record_throttle(&self.user, &self.client_id, throttle_ms, now);
        let throttle = Duration::from_millis(throttle_ms);
        self.mute.mute_for(throttle);
        let Some(response) = response else {
            return Duration::ZERO;
        };
        set_throttle_time_ms(response, self.version, throttle_ms_i32(throttle_ms));
        if client_throttles(self.api, self.version) {
            Duration::ZERO
        } else {
            throttle
        }
    }
}

impl ConsumerFetchQuota for RequestQuota {
    fn max_bytes(&self) -> usize {
        let max = self
            .managers
            .fetch
            .max_value_in_quota_window(&self.user, &self.client_id);
        if max >= usize::MAX as f64 {
            usize::MAX
        } else {
            max.max(0.0) as usize
        }
    }

    fn record(&mut self, bytes: usize) -> u64 {
        let now = now_ms();
        let fetch = &self.managers.fetch;
        let throttle =
            fetch.record_and_get_throttle_time_ms(&self.user, &self.client_id, bytes as f64, now);
        if throttle > 0 {
            // Answered empty: what was recorded was not sent.
            fetch.unrecord(&self.user, &self.client_id, bytes as f64, now);
            self.set_bandwidth(QuotaKind::Fetch, throttle);
        }
        throttle
    }
}
