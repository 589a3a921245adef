//! The scrape: [`RequestMetrics`] as Prometheus text, Kafka's JMX names mapped as
//! `docs/metrics.md`'s table says (`kafka.network:type=RequestMetrics,name=TotalTimeMs,
//! request=Produce` → `kafka_network_RequestMetrics_TotalTimeMs{request="Produce"}`), and
//! the windows the quantiles and idle ratios are computed over.
//!
//! Quantiles cover the values recorded since the start of the previous window: windows of
//! [`WINDOW`] roll at scrapes, so with a scrape at least every 30 s a quantile covers the last
//! 30 to 60 s (Kafka's decaying reservoir weighs about the last five minutes); a request name
//! without a request in that time shows NaN, as a Prometheus summary does. `_count` and
//! `_sum` are cumulative since the process started. The idle ratios cover the time since the
//! previous scrape.

use std::fmt::Write;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use kraftd_protocol::{ApiKey, ErrorCode};

use super::histogram::Snapshot;
use super::{
    Phase, RequestMetrics, API_SLOTS, FETCH_CONSUMER, FETCH_FOLLOWER, MAX_ERROR_CODE, PHASES,
    SLOTS, VERSIONS,
};

/// How long a quantile window lasts, at least.
pub const WINDOW: Duration = Duration::from_secs(30);

/// Kafka's histogram attributes (50thPercentile ... 999thPercentile) as quantiles.
pub const QUANTILES: [(f64, &str); 6] = [
    (0.5, "0.5"),
    (0.75, "0.75"),
    (0.95, "0.95"),
    (0.98, "0.98"),
    (0.99, "0.99"),
    (0.999, "0.999"),
];

/// One connection metric: name, Prometheus type, help, and its value of a listener.
type ConnectionFamily = (
    &'static str,
    &'static str,
    &'static str,
    fn(&super::ListenerMetrics) -> i64,
);

/// What the scrape remembers between scrapes.
#[derive(Debug, Default)]
pub(super) struct ScrapeState {
    /// Snapshots by slot × phase at the start of the previous window and of this one.
    older: Vec<Option<Snapshot>>,
    newer: Vec<Option<Snapshot>>,
    newer_at: Option<Instant>,
    /// The busy sums at the previous idle measurement.
    idle_at: Option<Instant>,
    network_busy: u64,
    handler_busy: u64,
}

/// The request name a slot counts.
fn slot_name(index: usize) -> Option<&'static str> {
    match index {
        FETCH_CONSUMER => Some("FetchConsumer"),
        FETCH_FOLLOWER => Some("FetchFollower"),
        i if i < API_SLOTS => ApiKey::from_i16(i as i16).map(ApiKey::name),
        _ => None,
    }
}

/// Kafka's name of an error code (an unknown code is UNKNOWN_SERVER_ERROR, as Kafka's
/// `Errors.forCode` reads it).
fn error_name(code: i16) -> &'static str {
    ErrorCode::from_code(code)
        .unwrap_or(ErrorCode::UnknownServerError)
        .name()
}

fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// `1 - busy / (elapsed × workers)`, within 0..=1; 1 when no time passed.
pub(crate) fn idle_ratio(busy_ns: u64, elapsed: Duration, workers: usize) -> f64 {
    let capacity = elapsed.as_nanos() as f64 * workers.max(1) as f64;
    if capacity <= 0.0 {
        return 1.0;
    }
    (1.0 - busy_ns as f64 / capacity).clamp(0.0, 1.0)
}

impl RequestMetrics {
    /// Appends the metrics in Prometheus text format, labelled with `node_id`.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        self.write_connections(node_id, out);
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let mut state = self.scrape.lock().unwrap_or_else(|e| e.into_inner());
        self.write_idle(node_id, now, &mut state, out);
        let seen: Vec<(usize, &'static str, &super::ApiMetrics)> = (0..SLOTS)
            .filter_map(|i| Some((i, slot_name(i)?, self.apis[i].get()?.as_ref())))
            .collect();

        let family = "kafka_network_RequestMetrics_RequestsPerSec_total";
        header(out, family, "counter", "Requests answered, by request name and version (Kafka's RequestsPerSec meter's count).");
        for (_, name, m) in &seen {
            for version in 0..VERSIONS {
                let n = m.requests[version].load(Ordering::Relaxed);
                if n > 0 {
                    let _ = writeln!(out, "{family}{{node=\"{node_id}\",request=\"{name}\",version=\"{version}\"}} {n}");
                }
            }
        }

        let family = "kafka_network_RequestMetrics_ErrorsPerSec_total";
        header(out, family, "counter", "Error codes in responses, NONE included, as the response's errorCounts() counts them (Kafka's ErrorsPerSec meter's count).");
        for (_, name, m) in &seen {
            let mut by_name: Vec<(&'static str, u64)> = Vec::new();
            for code in -1..=MAX_ERROR_CODE {
                let n = m.errors[(code + 1) as usize].load(Ordering::Relaxed);
                if n == 0 {
                    continue;
                }
                let error = error_name(code);
                match by_name.iter_mut().find(|(e, _)| *e == error) {
                    Some((_, total)) => *total += n,
                    None => by_name.push((error, n)),
                }
            }
            for (error, n) in by_name {
                let _ = writeln!(
                    out,
                    "{family}{{node=\"{node_id}\",request=\"{name}\",error=\"{error}\"}} {n}"
                );
            }
        }

        // Roll the windows, then take quantiles over what was recorded since the older one.
        let current: Vec<Option<Snapshot>> = (0..SLOTS * PHASES)
            .map(|i| {
                self.apis[i / PHASES]
                    .get()
                    .map(|m| m.histograms[i % PHASES].snapshot())
            })
            .collect();
        if state
            .newer_at
            .is_none_or(|at| now.duration_since(at) >= WINDOW)
        {
            state.older = std::mem::replace(&mut state.newer, current.clone());
            state.newer_at = Some(now);
        }
        let empty = Snapshot::default();
        for phase in Phase::ALL {
            let family = format!("kafka_network_RequestMetrics_{}", phase.name());
            let unit = if phase.is_time() {
                "milliseconds"
            } else {
                "bytes"
            };
            header(out, &family, "summary", &format!("Kafka's {} histogram ({unit}), by request name: quantiles over the last 30-60 s, count and sum since start.", phase.name()));
            let scale = if phase.is_time() { 1_000.0 } else { 1.0 };
            for (slot, name, _) in &seen {
                let index = slot * PHASES + phase as usize;
                let Some(now_snapshot) = &current[index] else {
                    continue;
                };
                let base = state
                    .older
                    .get(index)
                    .and_then(Option::as_ref)
                    .unwrap_or(&empty);
                let window = now_snapshot.since(base);
                let labels = format!("node=\"{node_id}\",request=\"{name}\"");
                for (q, label) in QUANTILES {
                    match window.quantile(q) {
                        Some(v) => {
                            let _ = writeln!(
                                out,
                                "{family}{{{labels},quantile=\"{label}\"}} {}",
                                v as f64 / scale
                            );
                        }
                        None => {
                            let _ = writeln!(out, "{family}{{{labels},quantile=\"{label}\"}} NaN");
                        }
                    }
                }
                let _ = writeln!(
                    out,
                    "{family}_sum{{{labels}}} {}",
                    now_snapshot.sum as f64 / scale
                );
                let _ = writeln!(out, "{family}_count{{{labels}}} {}", now_snapshot.count());
            }
        }
    }

    fn write_connections(&self, node_id: i32, out: &mut String) {
        let listeners = self
            .listeners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let families: [ConnectionFamily; 3] = [
            ("connection_count", "gauge", "Open connections (Kafka's connection-count).", |l| l.open.load(Ordering::Relaxed)),
            ("connection_creation_total", "counter", "Connections accepted (Kafka's connection-creation-total; its rate is connection-creation-rate).", |l| l.created.load(Ordering::Relaxed) as i64),
            ("connection_close_total", "counter", "Connections closed (Kafka's connection-close-total).", |l| l.closed.load(Ordering::Relaxed) as i64),
        ];
        for (name, kind, help, value) in families {
            let family = format!("kafka_server_socket_server_metrics_{name}");
            header(out, &family, kind, help);
            for l in &listeners {
                let _ = writeln!(
                    out,
                    "{family}{{node=\"{node_id}\",listener=\"{}\"}} {}",
                    l.name,
                    value(l)
                );
            }
        }
    }

    /// The two idle ratios over the time since the previous scrape.
    ///
    /// kraftd has no network threads nor handler threads: every connection's reader and
    /// writer, and the tasks handling its requests, are tokio tasks sharing the runtime's
    /// worker threads. So "idle" is measured against that pool: the network side is busy
    /// while it decodes a request or encodes and writes a response (ResponseSendTime: a
    /// write waiting on a full socket buffer counts as busy), the handler side during
    /// each request's LocalTime; idle is `1 - busy / (elapsed × worker threads)`. Time a
    /// worker spends on other tasks (Raft, replication, the log cleaner) counts as idle
    /// for both, and the two overlap the same threads, so each reads as "how much of the
    /// pool this side left free", not as a share of dedicated threads as in Kafka.
    fn write_idle(
        &self,
        node_id: i32,
        now: Instant,
        state: &mut super::render::ScrapeState,
        out: &mut String,
    ) {
        let network: u64 = self
            .network_busy
            .iter()
            .map(|p| p.0.load(Ordering::Relaxed))
            .sum();
        let handler: u64 = self
            .handler_busy
            .iter()
            .map(|p| p.0.load(Ordering::Relaxed))
            .sum();
        let since = state.idle_at.unwrap_or(self.created);
        let elapsed = now.saturating_duration_since(since);
        let workers = tokio::runtime::Handle::try_current()
            .map(|h| h.metrics().num_workers())
            .unwrap_or(1);
        let network_idle = idle_ratio(network.saturating_sub(state.network_busy), elapsed, workers);
        let handler_idle = idle_ratio(handler.saturating_sub(state.handler_busy), elapsed, workers);
        state.idle_at = Some(now);
        state.network_busy = network;
        state.handler_busy = handler;
        for (family, help, value) in [
            ("kafka_network_SocketServer_NetworkProcessorAvgIdlePercent", "Share (0-1) of the runtime's worker time not spent decoding requests or writing responses since the previous scrape.", network_idle),
            ("kafka_server_KafkaRequestHandlerPool_RequestHandlerAvgIdlePercent", "Share (0-1) of the runtime's worker time not spent in request handlers' local work since the previous scrape.", handler_idle),
        ] {
            header(out, family, "gauge", help);
            let _ = writeln!(out, "{family}{{node=\"{node_id}\"}} {value}");
        }
    }
}
