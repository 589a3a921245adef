//! Request and network metrics of every listener (brokers' and controllers' alike, both
//! served by [`super::server`]), with Kafka's names and meanings: `RequestChannel`'s
//! `kafka.network:type=RequestMetrics` (per API: RequestsPerSec by version, ErrorsPerSec by
//! error code as the response's `errorCounts()` counts them, and the phase histograms),
//! `socket-server-metrics` (connections per listener), `NetworkProcessorAvgIdlePercent` and
//! `RequestHandlerAvgIdlePercent`. One [`RequestMetrics`] per process, shared through
//! [`super::ServerConfig::metrics`]; the mapping to Prometheus names is in
//! `docs/metrics.md` and [`RequestMetrics::write_prometheus`].
//!
//! Cost on the request path: recording is relaxed atomic adds into per-API counters and
//! fixed-bucket histograms ([`histogram`]), no lock and no task hand-off; the only
//! allocation is the request's [`RequestTimer`]. A connection adds its busy time to one of a
//! few cache-line-padded shards. Everything else (windows, quantiles, idle ratios) is the
//! scrape's work. `request.metrics.enable=false` (a kraftd setting, default true) turns all
//! of it off, for measuring what it costs (`cargo xtask bench request-metrics`).
//!
//! The phases (Kafka's definitions; see [`timer`] for who marks what): RequestQueueTimeMs
//! from the frame read to the handler starting on it; LocalTimeMs the handler's own work;
//! RemoteTimeMs time parked waiting on others (acks=all replication, a fetch's max wait,
//! the controller for forwarded and controller requests); ThrottleTimeMs a response held
//! back by a quota; ResponseQueueTimeMs from the response being ready to the connection's
//! writer taking it (responses go out in request order, so this includes waiting behind
//! earlier ones); ResponseSendTimeMs encoding and writing it; TotalTimeMs all of it.

pub mod histogram;
mod render;
mod timer;

#[cfg(test)]
mod tests;

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use kraftd_protocol::{ApiKey, RequestBody, ResponseBody};

use histogram::AtomicHistogram;
pub use timer::{mark_local_complete, RequestTimer};

/// Slots for API keys 0..API_SLOTS (Kafka 4.4's largest key is below 100).
const API_SLOTS: usize = 128;
/// Kafka's `FetchConsumer` and `FetchFollower` request metrics, beside `Fetch`.
const FETCH_CONSUMER: usize = API_SLOTS;
const FETCH_FOLLOWER: usize = API_SLOTS + 1;
const SLOTS: usize = API_SLOTS + 2;
/// Request versions counted (every API's versions are far below).
const VERSIONS: usize = 32;
/// Error codes -1..=MAX_ERROR_CODE are counted by code; others as UNKNOWN_SERVER_ERROR
/// (Kafka's `Errors.forCode` of an unknown code).
const MAX_ERROR_CODE: i16 = 254;
/// Shards of the busy-time sums.
const SHARDS: usize = 8;

/// The histograms of one request name, in [`Phase`] order.
pub const PHASES: usize = 9;

/// What one request's histograms measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    TotalTime = 0,
    RequestQueueTime,
    LocalTime,
    RemoteTime,
    ThrottleTime,
    ResponseQueueTime,
    ResponseSendTime,
    RequestBytes,
    ResponseBytes,
}

impl Phase {
    pub const ALL: [Phase; PHASES] = [
        Phase::TotalTime,
        Phase::RequestQueueTime,
        Phase::LocalTime,
        Phase::RemoteTime,
        Phase::ThrottleTime,
        Phase::ResponseQueueTime,
        Phase::ResponseSendTime,
        Phase::RequestBytes,
        Phase::ResponseBytes,
    ];

    /// Kafka's metric name.
    pub fn name(self) -> &'static str {
        match self {
            Phase::TotalTime => "TotalTimeMs",
            Phase::RequestQueueTime => "RequestQueueTimeMs",
            Phase::LocalTime => "LocalTimeMs",
            Phase::RemoteTime => "RemoteTimeMs",
            Phase::ThrottleTime => "ThrottleTimeMs",
            Phase::ResponseQueueTime => "ResponseQueueTimeMs",
            Phase::ResponseSendTime => "ResponseSendTimeMs",
            Phase::RequestBytes => "RequestBytes",
            Phase::ResponseBytes => "ResponseBytes",
        }
    }

    /// Times are recorded in microseconds and shown in milliseconds; sizes in bytes.
    fn is_time(self) -> bool {
        !matches!(self, Phase::RequestBytes | Phase::ResponseBytes)
    }
}

/// The counters and histograms of one request name (`Produce`, `FetchConsumer`, ...).
#[derive(Debug)]
pub struct ApiMetrics {
    requests: [AtomicU64; VERSIONS],
    /// By error code + 1 (code -1 first).
    errors: Box<[AtomicU64]>,
    histograms: [AtomicHistogram; PHASES],
}

impl Default for ApiMetrics {
    fn default() -> Self {
        Self {
            requests: std::array::from_fn(|_| AtomicU64::new(0)),
            errors: (-1..=MAX_ERROR_CODE).map(|_| AtomicU64::new(0)).collect(),
            histograms: std::array::from_fn(|_| AtomicHistogram::default()),
        }
    }
}

impl ApiMetrics {
    fn count_error(&self, code: i16, n: u64) {
        let code = if (-1..=MAX_ERROR_CODE).contains(&code) {
            code
        } else {
            -1
        };
        self.errors[(code + 1) as usize].fetch_add(n, Ordering::Relaxed);
    }
}

/// `socket-server-metrics` of one listener.
#[derive(Debug)]
pub struct ListenerMetrics {
    name: String,
    open: AtomicI64,
    created: AtomicU64,
    closed: AtomicU64,
}

impl ListenerMetrics {
    /// Counts a connection accepted; the guard counts it closed when dropped.
    pub fn opened(self: &Arc<Self>) -> ConnectionGuard {
        self.open.fetch_add(1, Ordering::Relaxed);
        self.created.fetch_add(1, Ordering::Relaxed);
        ConnectionGuard(Arc::clone(self))
    }

    /// Connections open now.
    pub fn connection_count(&self) -> i64 {
        self.open.load(Ordering::Relaxed)
    }
}

/// One open connection of a listener.
#[derive(Debug)]
pub struct ConnectionGuard(Arc<ListenerMetrics>);

impl Drop for ConnectionGuard {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::Relaxed);
        self.0.closed.fetch_add(1, Ordering::Relaxed);
    }
}

/// A counter on a cache line of its own.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Padded(AtomicU64);

/// The request and network metrics of one process.
#[derive(Debug)]
pub struct RequestMetrics {
    enabled: bool,
    apis: Box<[OnceLock<Box<ApiMetrics>>]>,
    listeners: Mutex<Vec<Arc<ListenerMetrics>>>,
    /// Nanoseconds the server spent decoding requests and writing responses.
    network_busy: [Padded; SHARDS],
    /// Nanoseconds handlers spent on their requests' local work.
    handler_busy: [Padded; SHARDS],
    next_connection: AtomicU64,
    created: Instant,
    /// The scrape's state: windows of the histograms, the last idle measurement.
    scrape: Mutex<render::ScrapeState>,
}

impl Default for RequestMetrics {
    fn default() -> Self {
        Self::new(true)
    }
}

/// A request read and handed to its handler, until its response is written.
#[derive(Debug)]
pub(crate) struct InFlight {
    pub timer: RequestTimer,
    pub api: ApiKey,
    pub version: i16,
    /// For Fetch: whether a follower (a replica id ≥ 0) sent it.
    pub fetch_from_follower: Option<bool>,
    /// The frame's size, header included.
    pub request_bytes: usize,
    /// When the handler was called, and when its `dispatch` returned.
    pub dispatched: Instant,
    pub returned: Instant,
    pub shard: usize,
}

impl RequestMetrics {
    /// `enabled = false` records nothing per request (connections are still counted).
    pub fn new(enabled: bool) -> Self {
        Self {
            enabled,
            apis: (0..SLOTS).map(|_| OnceLock::new()).collect(),
            listeners: Mutex::new(Vec::new()),
            network_busy: Default::default(),
            handler_busy: Default::default(),
            next_connection: AtomicU64::new(0),
            created: Instant::now(),
            scrape: Mutex::new(render::ScrapeState::default()),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The metrics of listener `name` (created at its first use).
    pub fn listener(&self, name: &str) -> Arc<ListenerMetrics> {
        let mut listeners = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(l) = listeners.iter().find(|l| l.name == name) {
            return Arc::clone(l);
        }
        let l = Arc::new(ListenerMetrics {
            name: name.to_string(),
            open: AtomicI64::new(0),
            created: AtomicU64::new(0),
            closed: AtomicU64::new(0),
        });
        listeners.push(Arc::clone(&l));
        l
    }

    /// The busy-time shard a new connection adds to.
    pub(crate) fn connection_shard(&self) -> usize {
        self.next_connection.fetch_add(1, Ordering::Relaxed) as usize % SHARDS
    }

    /// A timer for a request whose frame was read at `start`; a disabled one when off.
    pub(crate) fn start(&self, start: Instant) -> RequestTimer {
        if self.enabled {
            RequestTimer::started(start)
        } else {
            RequestTimer::disabled()
        }
    }

    fn slot(&self, index: usize) -> &ApiMetrics {
        self.apis[index].get_or_init(Default::default)
    }

    fn api_slot(&self, api: ApiKey) -> Option<&ApiMetrics> {
        let index = usize::try_from(api.code())
            .ok()
            .filter(|i| *i < API_SLOTS)?;
        Some(self.slot(index))
    }

    /// The request names a request counts under: its API, and for a Fetch also
    /// `FetchFollower` or `FetchConsumer`.
    fn slots_of(&self, request: &InFlight) -> impl Iterator<Item = &ApiMetrics> {
        let fetch = request.fetch_from_follower.map(|follower| {
            self.slot(if follower {
                FETCH_FOLLOWER
            } else {
                FETCH_CONSUMER
            })
        });
        fetch.into_iter().chain(self.api_slot(request.api))
    }

    /// Counts the error codes of a response (Kafka's `updateErrorMetrics` over
    /// `errorCounts()`: every code, `NONE` included).
    pub(crate) fn count_errors(&self, api: ApiKey, version: i16, body: &ResponseBody) {
        let Some(m) = self.api_slot(api).filter(|_| self.enabled) else {
            return;
        };
        // Runs of one code (a response's partitions mostly agree) cost one add.
        let mut run: Option<(i16, u64)> = None;
        body.error_codes(version, &mut |code| match &mut run {
            Some((c, n)) if *c == code => *n += 1,
            _ => {
                if let Some((c, n)) = run.replace((code, 1)) {
                    m.count_error(c, n);
                }
            }
        });
        if let Some((c, n)) = run {
            m.count_error(c, n);
        }
    }

    /// Records a request whose response was taken by the connection's writer at `taken`
    /// and written by `end` (`response_bytes` `None`: no response, acks=0).
    pub(crate) fn finish(
        &self,
        request: &InFlight,
        taken: Instant,
        end: Instant,
        response_bytes: Option<usize>,
    ) {
        let Some(marks) = request.timer.marks() else {
            return;
        };
        let phases = phases(
            marks.start,
            request.timer.read(),
            request.dispatched,
            request.returned,
            taken,
            end,
        );
        let version = usize::try_from(request.version)
            .unwrap_or(0)
            .min(VERSIONS - 1);
        for m in self.slots_of(request) {
            m.requests[version].fetch_add(1, Ordering::Relaxed);
            for (phase, nanos) in Phase::ALL.iter().zip(phases.iter()) {
                if phase.is_time() {
                    m.histograms[*phase as usize].record(nanos / 1_000);
                }
            }
            m.histograms[Phase::RequestBytes as usize].record(request.request_bytes as u64);
            if let Some(bytes) = response_bytes {
                m.histograms[Phase::ResponseBytes as usize].record(bytes as u64);
            }
        }
        let shard = request.shard % SHARDS;
        let decode = request.dispatched.saturating_duration_since(marks.start);
        let network = decode.as_nanos() as u64 + phases[Phase::ResponseSendTime as usize];
        self.network_busy[shard]
            .0
            .fetch_add(network, Ordering::Relaxed);
        self.handler_busy[shard]
            .0
            .fetch_add(phases[Phase::LocalTime as usize], Ordering::Relaxed);
    }

    /// Requests of `api` at `version` so far (tests and the bench).
    pub fn requests(&self, api: ApiKey, version: i16) -> u64 {
        let index = usize::try_from(api.code()).unwrap_or(usize::MAX);
        let version = usize::try_from(version).unwrap_or(VERSIONS);
        match (self.apis.get(index).and_then(OnceLock::get), version) {
            (Some(m), v) if v < VERSIONS => m.requests[v].load(Ordering::Relaxed),
            _ => 0,
        }
    }
}

/// Whether a Fetch came from a follower: Kafka's `FetchRequest.isFromFollower` (a replica
/// id ≥ 0, in the request or, v15+, its replica state). `None` for other requests.
pub(crate) fn fetch_from_follower(body: &RequestBody) -> Option<bool> {
    match body {
        RequestBody::Fetch(f) => Some(f.replica_id >= 0 || f.replica_state.replica_id >= 0),
        _ => None,
    }
}

/// The phase durations in nanoseconds, in [`Phase`] order (the two sizes 0). Marks a
/// handler left out are filled in as [`timer`] says, and every mark is kept between its
/// neighbours, so the phases add up to the total.
pub(crate) fn phases(
    start: Instant,
    marked: timer::Marked,
    dispatched: Instant,
    returned: Instant,
    taken: Instant,
    end: Instant,
) -> [u64; PHASES] {
    let since = |t: Instant| t.saturating_duration_since(start).as_nanos() as u64;
    let taken_ns = since(taken);
    let complete = marked.complete.unwrap_or(taken_ns);
    let remote = marked.remote.unwrap_or(complete);
    let local = marked.local.unwrap_or(match marked.dequeued {
        Some(_) => remote,
        None => since(returned),
    });
    let dequeued = marked.dequeued.unwrap_or(since(dispatched));
    let mut points = [0, dequeued, local, remote, complete, taken_ns, since(end)];
    for i in 1..points.len() {
        points[i] = points[i].max(points[i - 1]);
    }
    let mut out = [0; PHASES];
    out[Phase::TotalTime as usize] = points[6];
    out[Phase::RequestQueueTime as usize] = points[1] - points[0];
    out[Phase::LocalTime as usize] = points[2] - points[1];
    out[Phase::RemoteTime as usize] = points[3] - points[2];
    out[Phase::ThrottleTime as usize] = points[4] - points[3];
    out[Phase::ResponseQueueTime as usize] = points[5] - points[4];
    out[Phase::ResponseSendTime as usize] = points[6] - points[5];
    out
}
