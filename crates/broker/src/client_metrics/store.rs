//! The latest values of the metrics clients push (KIP-714), kept for the node's Prometheus
//! `/metrics` page: kraftd's own receiver, where Kafka hands the payload to a plugin.
//!
//! Each series is a metric name (sanitized to Prometheus' rules: every character outside
//! `[a-zA-Z0-9_:]` becomes `_`, so `org.apache.kafka.producer.record.send.rate` is
//! `org_apache_kafka_producer_record_send_rate`) with its data point's attributes as labels,
//! plus `client_instance_id` and `client_id` (the broker's view of the client; an attribute
//! of the same name and another value is kept as `exported_<name>`). Gauges keep their last
//! value; a sum pushed with DELTA temporality (what the broker asks for, as Kafka) is added
//! up into a running total, so a counter stays a counter; histograms expose `_bucket`,
//! `_sum` and `_count`.
//!
//! Bounded: at most [`MAX_CLIENTS`] clients, [`MAX_SERIES_PER_CLIENT`] series each and
//! [`MAX_STORE_BYTES`] in all (each series' names, labels and value with a fixed allowance
//! for the map's own memory, [`series_bytes`]); what does not fit is dropped and counted
//! (`kraftd_client_telemetry_dropped_*`). A client's
//! series go once it has not pushed for `max(60 s, 3 × its push interval)`, Kafka's own
//! expiry of a client instance (`ClientMetricsManager`: `max(cacheExpiryMs, 3 ×
//! pushIntervalMs)`): one missed push, even two, keeps the series; a client gone stops
//! showing within three intervals.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;

use kraftd_protocol::codec::Uuid;

use super::otlp::{Point, PointValue};
use crate::replica::replica_manager::escape_label;

/// The most clients whose metrics are kept at once.
pub const MAX_CLIENTS: usize = 1024;
/// The most series kept for one client.
pub const MAX_SERIES_PER_CLIENT: usize = 2000;
/// The most memory all kept series may take, as [`series_bytes`] counts it.
pub const MAX_STORE_BYTES: usize = 64 * 1024 * 1024;
/// What one series costs beyond its strings: the key and value structs, the label vector's
/// headers and the B-tree's share of a node (measured sizes, rounded up).
const SERIES_OVERHEAD_BYTES: usize = 160;
/// The shortest time a silent client's series are kept (Kafka's cache expiry).
pub const MIN_EXPIRY_MS: u64 = 60_000;

/// The label names the broker adds to every series.
const INSTANCE_LABEL: &str = "client_instance_id";
const CLIENT_ID_LABEL: &str = "client_id";

/// Every pushed series, by client instance.
#[derive(Debug, Default)]
pub struct TelemetryStore {
    clients: HashMap<Uuid, ClientSeries>,
    dropped_series: u64,
    dropped_pushes: u64,
    /// The sum of [`series_bytes`] over every kept series.
    bytes: usize,
}

/// One client's series.
#[derive(Debug)]
struct ClientSeries {
    client_id: String,
    expires_at_ms: u64,
    /// (sanitized name, labels) → value.
    series: BTreeMap<SeriesKey, Value>,
    /// The sum of [`series_bytes`] over `series`.
    bytes: usize,
}

/// A label's name and value.
type Label = (String, String);
type SeriesKey = (String, Vec<Label>);

#[derive(Debug, Clone, PartialEq)]
enum Value {
    Gauge(f64),
    Counter(f64),
    Histogram {
        count: u64,
        sum: f64,
        bounds: Vec<f64>,
        bucket_counts: Vec<u64>,
    },
}

impl Value {
    fn kind(&self) -> &'static str {
        match self {
            Value::Gauge(_) => "gauge",
            Value::Counter(_) => "counter",
            Value::Histogram { .. } => "histogram",
        }
    }
}

impl TelemetryStore {
    /// Records one push of `client`'s points at `now_ms`; its series then live until
    /// `max(MIN_EXPIRY_MS, 3 × push_interval_ms)` after it.
    pub fn record(
        &mut self,
        instance: Uuid,
        client_id: &str,
        push_interval_ms: i32,
        now_ms: u64,
        points: Vec<Point>,
    ) {
        self.expire(now_ms);
        if !self.clients.contains_key(&instance) && self.clients.len() >= MAX_CLIENTS {
            self.dropped_pushes += 1;
            return;
        }
        let keep_ms = (u64::try_from(push_interval_ms).unwrap_or(0) * 3).max(MIN_EXPIRY_MS);
        let client = self
            .clients
            .entry(instance)
            .or_insert_with(|| ClientSeries {
                client_id: client_id.to_string(),
                expires_at_ms: 0,
                series: BTreeMap::new(),
                bytes: 0,
            });
        client.client_id = client_id.to_string();
        client.expires_at_ms = now_ms.saturating_add(keep_ms);
        let instance_text = instance.to_base64();
        for point in points {
            let labels = labels(&instance_text, client_id, point.attributes);
            let key = (sanitize_name(&point.name), labels);
            // A replaced series is charged its new size: a push may not grow a kept
            // histogram past the store's cap any more than it may add a series.
            let old_cost = client.series.get(&key).map(|v| stored_bytes(&key, v));
            let cost = series_bytes(&key, &point.value);
            let growth = cost.saturating_sub(old_cost.unwrap_or(0));
            let full = (old_cost.is_none() && client.series.len() >= MAX_SERIES_PER_CLIENT)
                || self.bytes.saturating_add(growth) > MAX_STORE_BYTES;
            if full {
                self.dropped_series += 1;
                continue;
            }
            let old_cost = old_cost.unwrap_or(0);
            client.bytes = client.bytes - old_cost + cost;
            self.bytes = self.bytes - old_cost + cost;
            let previous = client.series.get(&key);
            let value = match point.value {
                PointValue::Gauge(v) => Value::Gauge(v),
                PointValue::Sum { value, delta, .. } => match (delta, previous) {
                    (true, Some(Value::Counter(total))) => Value::Counter(total + value),
                    _ => Value::Counter(value),
                },
                PointValue::Histogram {
                    count,
                    sum,
                    bounds,
                    bucket_counts,
                    delta,
                } => match (delta, previous) {
                    (
                        true,
                        Some(Value::Histogram {
                            count: c0,
                            sum: s0,
                            bounds: b0,
                            bucket_counts: k0,
                        }),
                    ) if *b0 == bounds && k0.len() == bucket_counts.len() => Value::Histogram {
                        count: c0.saturating_add(count),
                        sum: s0 + sum,
                        bucket_counts: k0
                            .iter()
                            .zip(&bucket_counts)
                            .map(|(a, b)| a.saturating_add(*b))
                            .collect(),
                        bounds,
                    },
                    _ => Value::Histogram {
                        count,
                        sum,
                        bounds,
                        bucket_counts,
                    },
                },
            };
            client.series.insert(key, value);
        }
    }

    /// Forgets the clients that stopped pushing.
    pub fn expire(&mut self, now_ms: u64) {
        let mut freed = 0;
        self.clients.retain(|_, c| {
            let keep = c.expires_at_ms > now_ms;
            if !keep {
                freed += c.bytes;
            }
            keep
        });
        self.bytes -= freed;
    }

    /// The memory the kept series take, as [`series_bytes`] counts it.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many clients and series are kept.
    pub fn sizes(&self) -> (usize, usize) {
        (
            self.clients.len(),
            self.clients.values().map(|c| c.series.len()).sum(),
        )
    }

    /// The series in Prometheus' text format, one family (HELP and TYPE once) per name
    /// across clients, then kraftd's counters of what was dropped.
    pub fn write_prometheus(&self, node_id: i32, out: &mut String) {
        let mut families: BTreeMap<&str, Vec<(&[Label], &Value)>> = BTreeMap::new();
        for client in self.clients.values() {
            for ((name, labels), value) in &client.series {
                families
                    .entry(name.as_str())
                    .or_default()
                    .push((labels.as_slice(), value));
            }
        }
        for (name, series) in families {
            let kind = series[0].1.kind();
            let kind = if series.iter().all(|(_, v)| v.kind() == kind) {
                kind
            } else {
                "untyped"
            };
            let _ = writeln!(
                out,
                "# HELP {name} Pushed by clients (KIP-714 client telemetry)."
            );
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (labels, value) in series {
                let base = render_labels(node_id, labels, None);
                match value {
                    Value::Gauge(v) | Value::Counter(v) => {
                        let _ = writeln!(out, "{name}{{{base}}} {}", number(*v));
                    }
                    Value::Histogram {
                        count,
                        sum,
                        bounds,
                        bucket_counts,
                    } => {
                        let mut cumulative = 0u64;
                        for (i, c) in bucket_counts.iter().enumerate() {
                            cumulative = cumulative.saturating_add(*c);
                            let le = bounds.get(i).map_or("+Inf".to_string(), |b| number(*b));
                            let labels = render_labels(node_id, labels, Some(&le));
                            let _ = writeln!(out, "{name}_bucket{{{labels}}} {cumulative}");
                        }
                        let _ = writeln!(out, "{name}_sum{{{base}}} {}", number(*sum));
                        let _ = writeln!(out, "{name}_count{{{base}}} {count}");
                    }
                }
            }
        }
        let (clients, series) = self.sizes();
        for (name, kind, help, value) in [
            (
                "clients",
                "gauge",
                "Clients whose pushed metrics this node keeps.",
                clients as u64,
            ),
            (
                "series",
                "gauge",
                "Series of pushed client metrics this node keeps.",
                series as u64,
            ),
            (
                "bytes",
                "gauge",
                "Memory the kept series of pushed client metrics take (approximate).",
                self.bytes as u64,
            ),
            (
                "dropped_series_total",
                "counter",
                "Pushed series dropped: the client had the most series kept per client, or the store its most bytes.",
                self.dropped_series,
            ),
            (
                "dropped_pushes_total",
                "counter",
                "Pushes whose metrics were dropped: metrics of the most clients were already kept.",
                self.dropped_pushes,
            ),
        ] {
            let full = format!("kraftd_client_telemetry_{name}");
            let _ = writeln!(out, "# HELP {full} {help}");
            let _ = writeln!(out, "# TYPE {full} {kind}");
            let _ = writeln!(out, "{full}{{node=\"{node_id}\"}} {value}");
        }
    }
}

/// What a series costs in memory: its name, labels and histogram buckets, and a fixed
/// allowance for the structures holding them. A histogram's bounds are counted at their
/// pushed length (a later push with other bounds replaces them, rarely).
fn series_bytes(key: &SeriesKey, value: &PointValue) -> usize {
    let buckets = match value {
        PointValue::Histogram {
            bounds,
            bucket_counts,
            ..
        } => bounds.len() + bucket_counts.len(),
        _ => 0,
    };
    key_bytes(key) + 8 * buckets + SERIES_OVERHEAD_BYTES
}

/// What a kept series costs (as [`series_bytes`] charged the point that made it).
fn stored_bytes(key: &SeriesKey, value: &Value) -> usize {
    let buckets = match value {
        Value::Histogram {
            bounds,
            bucket_counts,
            ..
        } => bounds.len() + bucket_counts.len(),
        _ => 0,
    };
    key_bytes(key) + 8 * buckets + SERIES_OVERHEAD_BYTES
}

/// The bytes of a series' name and labels.
fn key_bytes(key: &SeriesKey) -> usize {
    key.0.len()
        + key
            .1
            .iter()
            .map(|(k, v)| k.len() + v.len() + 2 * std::mem::size_of::<String>())
            .sum::<usize>()
}

/// The series' labels: the client's id labels, then the point's attributes (sanitized,
/// sorted, an attribute clashing with a label the broker sets renamed `exported_<name>`
/// unless it says the same).
fn labels(
    instance: &str,
    client_id: &str,
    attributes: Vec<(String, String)>,
) -> Vec<(String, String)> {
    let mut labels: BTreeMap<String, String> = BTreeMap::new();
    for (key, value) in attributes {
        let mut name = sanitize_label(&key);
        let reserved = match name.as_str() {
            INSTANCE_LABEL => Some(instance),
            CLIENT_ID_LABEL => Some(client_id),
            "node" | "le" => Some(""),
            _ => None,
        };
        match reserved {
            Some(ours) if ours == value => continue,
            Some(_) => name = format!("exported_{name}"),
            None => {}
        }
        labels.insert(name, value);
    }
    labels.insert(INSTANCE_LABEL.into(), instance.into());
    labels.insert(CLIENT_ID_LABEL.into(), client_id.into());
    labels.into_iter().collect()
}

fn render_labels(node_id: i32, labels: &[(String, String)], le: Option<&str>) -> String {
    let mut out = format!("node=\"{node_id}\"");
    for (k, v) in labels {
        let _ = write!(out, ",{k}=\"{}\"", escape_label(v));
    }
    if let Some(le) = le {
        let _ = write!(out, ",le=\"{le}\"");
    }
    out
}

/// A metric name under Prometheus' rules: `[a-zA-Z_:][a-zA-Z0-9_:]*`.
pub fn sanitize_name(name: &str) -> String {
    sanitize(name, true)
}

/// A label name under Prometheus' rules: `[a-zA-Z_][a-zA-Z0-9_]*`, not starting with the
/// reserved `__`.
fn sanitize_label(name: &str) -> String {
    let mut s = sanitize(name, false);
    if s.starts_with("__") {
        s.insert_str(0, "attr");
    }
    s
}

fn sanitize(name: &str, colon: bool) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || (colon && c == ':') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// A float as Prometheus writes it.
fn number(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v == f64::INFINITY {
        "+Inf".into()
    } else if v == f64::NEG_INFINITY {
        "-Inf".into()
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(name: &str, attrs: &[(&str, &str)], value: PointValue) -> Point {
        Point {
            name: name.into(),
            attributes: attrs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            value,
        }
    }

    fn sum(value: f64) -> PointValue {
        PointValue::Sum {
            value,
            delta: true,
            monotonic: true,
        }
    }

    #[test]
    fn names_and_labels_follow_prometheus_rules() {
        assert_eq!(
            sanitize_name("org.apache.kafka.producer.record-send.rate"),
            "org_apache_kafka_producer_record_send_rate"
        );
        assert_eq!(sanitize_name("9lives"), "_9lives");
        assert_eq!(sanitize_label("__name__"), "attr__name__");
        assert_eq!(sanitize_label("a:b"), "a_b");
    }

    #[test]
    fn deltas_add_up_gauges_replace_and_labels_carry_the_client() {
        let id = Uuid([7; 16]);
        let mut store = TelemetryStore::default();
        let push = |store: &mut TelemetryStore, now, v| {
            store.record(
                id,
                "p1",
                1000,
                now,
                vec![
                    point("a.total", &[("client_id", "p1"), ("topic", "t")], sum(v)),
                    point("a.rate", &[("client_id", "other")], PointValue::Gauge(v)),
                ],
            )
        };
        push(&mut store, 0, 2.0);
        push(&mut store, 1000, 3.0);
        let mut out = String::new();
        store.write_prometheus(1, &mut out);
        let inst = id.to_base64();
        assert!(
            out.contains(&format!(
            "a_total{{node=\"1\",client_id=\"p1\",client_instance_id=\"{inst}\",topic=\"t\"}} 5\n"
        )),
            "{out}"
        );
        assert!(out.contains(&format!(
            "a_rate{{node=\"1\",client_id=\"p1\",client_instance_id=\"{inst}\",exported_client_id=\"other\"}} 3\n"
        )), "{out}");
        assert!(out.contains("# TYPE a_total counter\n"));
        // Gone once silent for max(60 s, 3 intervals).
        store.expire(1000 + MIN_EXPIRY_MS - 1);
        assert_eq!(store.sizes().0, 1);
        assert!(store.bytes() > 0);
        store.expire(1000 + MIN_EXPIRY_MS);
        assert_eq!(store.sizes(), (0, 0));
        assert_eq!(store.bytes(), 0);
    }

    #[test]
    fn clients_and_series_are_capped_and_the_drops_counted() {
        let mut store = TelemetryStore::default();
        let many: Vec<Point> = (0..MAX_SERIES_PER_CLIENT + 5)
            .map(|i| point(&format!("m{i}"), &[], PointValue::Gauge(1.0)))
            .collect();
        store.record(Uuid([1; 16]), "c", 1000, 0, many);
        assert_eq!(store.sizes(), (1, MAX_SERIES_PER_CLIENT));
        for i in 0..MAX_CLIENTS + 3 {
            let mut id = [0u8; 16];
            id[..8].copy_from_slice(&(i as u64 + 10).to_be_bytes());
            store.record(
                Uuid(id),
                "c",
                1000,
                0,
                vec![point("x", &[], PointValue::Gauge(1.0))],
            );
        }
        assert_eq!(store.sizes().0, MAX_CLIENTS);
        let mut out = String::new();
        store.write_prometheus(1, &mut out);
        assert!(out.contains("kraftd_client_telemetry_dropped_series_total{node=\"1\"} 5\n"));
        assert!(out.contains("kraftd_client_telemetry_dropped_pushes_total{node=\"1\"} 4\n"));
    }

    #[test]
    fn a_replaced_series_is_charged_its_new_size() {
        let histogram = |buckets: usize| PointValue::Histogram {
            count: 1,
            sum: 1.0,
            bounds: vec![1.0; buckets],
            bucket_counts: vec![1; buckets + 1],
            delta: false,
        };
        let mut store = TelemetryStore::default();
        let id = Uuid([7; 16]);
        store.record(id, "app", 1000, 0, vec![point("h", &[], histogram(1))]);
        let small = store.bytes();
        // The same series again, with a thousand buckets: charged, not replaced for free.
        store.record(id, "app", 1000, 1, vec![point("h", &[], histogram(1000))]);
        let large = store.bytes();
        assert_eq!(large - small, 8 * 2 * 999);
        // Back to one bucket: the store shrinks again.
        store.record(id, "app", 1000, 2, vec![point("h", &[], histogram(1))]);
        assert_eq!(store.bytes(), small);
        // A replacement that would pass the cap is dropped, as a new series would be.
        store.bytes = MAX_STORE_BYTES - 100;
        store.record(id, "app", 1000, 3, vec![point("h", &[], histogram(1000))]);
        assert_eq!(store.bytes, MAX_STORE_BYTES - 100);
        assert_eq!(store.dropped_series, 1);
    }
}
