//! Client telemetry (KIP-714) on the broker, Kafka's `ClientMetricsManager`: the
//! GetTelemetrySubscriptions and PushTelemetry answers, the client instances they create,
//! and kraftd's own receiver of what clients push ([`store`], shown on `/metrics`).
//!
//! Subscriptions are the CLIENT_METRICS config resources of the metadata image (set with
//! `kafka-client-metrics` / `kafka-configs --entity-type client-metrics`, validated by the
//! controller). A client instance is matched against every subscription when it is first
//! seen, and again once the subscriptions changed: the union of the matching ones' metric
//! prefixes (`*` if one asks for every metric), the smallest of their intervals (Kafka's
//! five-minute default when none matches), and a subscription id computed as Kafka does
//! (CRC32C of the prefixes as Java prints its `HashSet` plus the interval, XOR the instance
//! id's Java hash code), so ids and answers are the ones a Kafka broker gives.
//!
//! Kafka answers these APIs only when a metrics reporter implementing `ClientTelemetry` is
//! configured; kraftd always has its receiver, so it always advertises and serves them.
//!
//! Sans IO apart from a mutex: the caller passes the time, the metadata image and fresh
//! ids; each instance expires `max(60 s, 3 × push interval)` after its last request, or
//! when its connection closes, as Kafka's.

pub mod otlp;
pub mod store;

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use bytes::Bytes;
use imbl::OrdMap;
use kraftd_controller::control::config_defs::{
    parse_subscription, ClientMetricsSubscription, ALL_SUBSCRIBED_METRICS, CLIENT_ID,
    CLIENT_INSTANCE_ID, CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION, CLIENT_SOURCE_ADDRESS,
    CLIENT_SOURCE_PORT, INTERVAL_MS_DEFAULT,
};
use kraftd_controller::image::ConfigResourceType;
use kraftd_controller::MetadataImage;
use kraftd_protocol::codec::Uuid;
use kraftd_protocol::messages::{
    GetTelemetrySubscriptionsRequest, GetTelemetrySubscriptionsResponse, PushTelemetryRequest,
    PushTelemetryResponse,
};
use kraftd_protocol::records::compression::decompress;
use kraftd_protocol::records::Compression;
use kraftd_protocol::ErrorCode;
use tracing::debug;

use store::TelemetryStore;

/// Kafka's `telemetry.max.bytes` default (1 MiB).
pub const TELEMETRY_MAX_BYTES_DEFAULT: i32 = 1024 * 1024;
/// The most client instances tracked (Kafka's `CACHE_MAX_SIZE`: 16k active connections).
const CACHE_MAX_SIZE: usize = 16_384;
/// The shortest life of an idle instance (Kafka's `DEFAULT_CACHE_EXPIRY_MS`).
const CACHE_EXPIRY_MS: u64 = 60_000;
/// The compression types accepted, in Kafka's order (`SUPPORTED_COMPRESSION_TYPES`: zstd,
/// lz4, gzip, snappy).
const ACCEPTED_COMPRESSION_TYPES: [Compression; 4] = [
    Compression::Zstd,
    Compression::Lz4,
    Compression::Gzip,
    Compression::Snappy,
];
/// Kafka's `Uuid.ONE_UUID`, reserved (the metadata topic's id).
const ONE_UUID: Uuid = Uuid([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);

/// What the broker knows of the client sending a request (Kafka's `RequestContext` as
/// `ClientMetricsInstanceMetadata` reads it).
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    pub client_id: String,
    pub software_name: String,
    pub software_version: String,
    pub source_address: String,
    pub source_port: String,
    /// The connection, to forget its instance when it closes.
    pub connection_id: String,
}

/// The broker's client-metrics state. Shared by every listener's handler.
#[derive(Debug)]
pub struct ClientMetricsManager {
    telemetry_max_bytes: i32,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// The image's subscriptions as last parsed, and what they were parsed from.
    subscriptions: Vec<ClientMetricsSubscription>,
    parsed_from: Vec<(String, OrdMap<String, String>)>,
    /// Bumped whenever the subscriptions change: instances older re-match.
    subscription_version: u64,
    instances: HashMap<Uuid, Instance>,
    connections: HashMap<String, Uuid>,
    next_sweep_ms: u64,
    store: TelemetryStore,
    throttle_count: u64,
    unknown_subscription_count: u64,
    invalid_record_count: u64,
}

/// One client instance, Kafka's `ClientMetricsInstance`.
#[derive(Debug, Clone)]
struct Instance {
    client: ClientInfo,
    subscription_id: i32,
    subscription_version: u64,
    /// In Java's `HashSet` order (the order Kafka answers them in).
    metrics: Vec<String>,
    push_interval_ms: i32,
    last_get_ms: u64,
    last_push_ms: u64,
    terminating: bool,
    last_known_error: ErrorCode,
    expires_at_ms: u64,
}

impl Instance {
    /// Kafka's `maybeUpdateGetRequestTimestamp`.
    fn maybe_update_get(&mut self, now_ms: u64) -> bool {
        let last = self.last_get_ms.max(self.last_push_ms);
        if now_ms.saturating_sub(last) >= interval(self.push_interval_ms) {
            self.last_get_ms = now_ms;
            return true;
        }
        false
    }

    /// Kafka's `maybeUpdatePushRequestTimestamp`: the first push after a get is accepted
    /// early (clients jitter the interval).
    fn maybe_update_push(&mut self, now_ms: u64) -> bool {
        let accept = self.last_get_ms > self.last_push_ms
            || now_ms.saturating_sub(self.last_push_ms) >= interval(self.push_interval_ms);
        if accept {
            self.last_push_ms = now_ms;
        }
        accept
    }

    fn attribute(&self, id: Uuid, name: &str) -> String {
        match name {
            CLIENT_INSTANCE_ID => id.to_base64(),
            CLIENT_ID => self.client.client_id.clone(),
            CLIENT_SOFTWARE_NAME => self.client.software_name.clone(),
            CLIENT_SOFTWARE_VERSION => self.client.software_version.clone(),
            CLIENT_SOURCE_ADDRESS => self.client.source_address.clone(),
            CLIENT_SOURCE_PORT => self.client.source_port.clone(),
            _ => String::new(),
        }
    }
}

fn interval(ms: i32) -> u64 {
    u64::try_from(ms).unwrap_or(0)
}

impl ClientMetricsManager {
    /// With the broker's `telemetry.max.bytes`.
    pub fn new(telemetry_max_bytes: i32) -> Self {
        ClientMetricsManager {
            telemetry_max_bytes,
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// GetTelemetrySubscriptions (Kafka's `processGetTelemetrySubscriptionRequest`).
    /// `fresh_id` gives random ids; one the client sends as zero is replaced by one not in
    /// use.
    pub fn get_telemetry_subscriptions(
        &self,
        image: &MetadataImage,
        now_ms: u64,
        client: &ClientInfo,
        request: &GetTelemetrySubscriptionsRequest,
        fresh_id: &mut dyn FnMut() -> Uuid,
    ) -> GetTelemetrySubscriptionsResponse {
        let mut inner = self.lock();
        inner.refresh(image);
        let id = if request.client_instance_id == Uuid::ZERO {
            loop {
                let id = fresh_id();
                let usable = id != Uuid::ZERO
                    && id != ONE_UUID
                    && !id.to_base64().starts_with('-')
                    && !inner.instances.contains_key(&id);
                if usable {
                    break id;
                }
            }
        } else {
            request.client_instance_id
        };
        let instance = inner.instance(id, client, now_ms);
        let exempt = matches!(
            instance.last_known_error,
            ErrorCode::UnknownSubscriptionId | ErrorCode::UnsupportedCompressionType
        );
        if !instance.maybe_update_get(now_ms) && !exempt {
            inner.throttle_count += 1;
            return GetTelemetrySubscriptionsResponse {
                error_code: ErrorCode::ThrottlingQuotaExceeded.code(),
                ..Default::default()
            };
        }
        instance.last_known_error = ErrorCode::None;
        GetTelemetrySubscriptionsResponse {
            error_code: 0,
            client_instance_id: id,
            subscription_id: instance.subscription_id,
            accepted_compression_types: ACCEPTED_COMPRESSION_TYPES
                .iter()
                .map(|c| c.id() as i8)
                .collect(),
            push_interval_ms: instance.push_interval_ms,
            telemetry_max_bytes: self.telemetry_max_bytes,
            delta_temporality: true,
            requested_metrics: instance.metrics.clone(),
            ..Default::default()
        }
    }

    /// PushTelemetry (Kafka's `processPushTelemetryRequest`), the payload decoded into
    /// [`store`] where Kafka hands it to its exporter plugin.
    pub fn push_telemetry(
        &self,
        image: &MetadataImage,
        now_ms: u64,
        client: &ClientInfo,
        request: &PushTelemetryRequest,
    ) -> PushTelemetryResponse {
        let error = |code: ErrorCode| PushTelemetryResponse {
            error_code: code.code(),
            ..Default::default()
        };
        let id = request.client_instance_id;
        if id == Uuid::ZERO || id == ONE_UUID {
            return error(ErrorCode::InvalidRequest);
        }
        let (client_id, push_interval_ms) = {
            let mut inner = self.lock();
            inner.refresh(image);
            let max_bytes = self.telemetry_max_bytes;
            let instance = inner.instance(id, client, now_ms);
            let checked = validate_push(instance, request, now_ms, max_bytes);
            instance.terminating = request.terminating;
            if let Err(code) = checked {
                instance.last_known_error = code;
                match code {
                    ErrorCode::ThrottlingQuotaExceeded => inner.throttle_count += 1,
                    ErrorCode::UnknownSubscriptionId => inner.unknown_subscription_count += 1,
                    _ => {}
                }
                return error(code);
            }
            if request.metrics.is_empty() {
                instance.last_known_error = ErrorCode::None;
                return PushTelemetryResponse::default();
            }
            (instance.client.client_id.clone(), instance.push_interval_ms)
        };
        // Decoded outside the lock: other clients' requests need not wait for it.
        let decoded = decode_payload(request, self.telemetry_max_bytes);
        let mut inner = self.lock();
        let code = match decoded {
            Ok(points) => {
                inner
                    .store
                    .record(id, &client_id, push_interval_ms, now_ms, points);
                ErrorCode::None
            }
            Err(reason) => {
                debug!(instance = %id.to_base64(), %reason, "refusing pushed telemetry");
                inner.invalid_record_count += 1;
                ErrorCode::InvalidRecord
            }
        };
        if let Some(instance) = inner.instances.get_mut(&id) {
            instance.last_known_error = code;
        }
        error(code)
    }

    /// Kafka's disconnect listener: a closed connection's instance is forgotten (its
    /// pushed series stay until they expire).
    pub fn on_disconnect(&self, connection_id: &str) {
        let mut inner = self.lock();
        if let Some(id) = inner.connections.remove(connection_id) {
            inner.instances.remove(&id);
        }
    }

    /// Kafka's `client-metrics` group and the pushed series, in Prometheus' text format.
    pub fn write_prometheus(&self, node_id: i32, now_ms: u64, out: &mut String) {
        use std::fmt::Write;
        let mut inner = self.lock();
        inner.sweep(now_ms);
        inner.store.expire(now_ms);
        for (name, kind, help, value) in [
            (
                "instance_count",
                "gauge",
                "The current number of client metrics instances being managed by the broker",
                inner.instances.len() as u64,
            ),
            (
                "unknown_subscription_request_count",
                "counter",
                "The total number of unknown-subscription-request",
                inner.unknown_subscription_count,
            ),
            (
                "throttle_count",
                "counter",
                "The total number of throttle",
                inner.throttle_count,
            ),
            (
                "invalid_record_count",
                "counter",
                "kraftd's own: pushes refused with INVALID_RECORD (a payload that does not decompress or decode)",
                inner.invalid_record_count,
            ),
        ] {
            let full = format!("kafka_server_client_metrics_{name}");
            let _ = writeln!(out, "# HELP {full} {help}");
            let _ = writeln!(out, "# TYPE {full} {kind}");
            let _ = writeln!(out, "{full}{{node=\"{node_id}\"}} {value}");
        }
        inner.store.write_prometheus(node_id, out);
    }
}

/// Kafka's `validatePushRequest`, in its order.
fn validate_push(
    instance: &mut Instance,
    request: &PushTelemetryRequest,
    now_ms: u64,
    max_bytes: i32,
) -> Result<(), ErrorCode> {
    if instance.terminating {
        return Err(ErrorCode::InvalidRequest);
    }
    if !instance.maybe_update_push(now_ms) && !request.terminating {
        return Err(ErrorCode::ThrottlingQuotaExceeded);
    }
    if request.subscription_id != instance.subscription_id {
        return Err(ErrorCode::UnknownSubscriptionId);
    }
    let known = u8::try_from(request.compression_type)
        .ok()
        .and_then(Compression::from_id)
        .is_some();
    if !known {
        return Err(ErrorCode::UnsupportedCompressionType);
    }
    if request.metrics.len() > usize::try_from(max_bytes).unwrap_or(0) {
        return Err(ErrorCode::TelemetryTooLarge);
    }
    Ok(())
}

/// The pushed payload decompressed and decoded.
fn decode_payload(
    request: &PushTelemetryRequest,
    max_bytes: i32,
) -> Result<Vec<otlp::Point>, String> {
    let codec = u8::try_from(request.compression_type)
        .ok()
        .and_then(Compression::from_id)
        .ok_or("unknown compression type")?;
    // Kafka's `PushTelemetryRequest.metricsData(telemetry.max.bytes)`: a payload may not
    // decompress to more than it may be sent as, so a small hostile one cannot make the
    // broker allocate more.
    let limit = usize::try_from(max_bytes).unwrap_or(0);
    let plain: Bytes = decompress(codec, &request.metrics, limit).map_err(|e| e.to_string())?;
    otlp::decode_metrics_data(&plain).map_err(|e| e.to_string())
}

impl Inner {
    /// Re-reads the subscriptions when the image's CLIENT_METRICS configs changed.
    fn refresh(&mut self, image: &MetadataImage) {
        let current: Vec<(String, OrdMap<String, String>)> = image
            .configs
            .of_type(ConfigResourceType::ClientMetrics)
            .map(|(r, m)| (r.name.clone(), m.clone()))
            .collect();
        if current == self.parsed_from {
            return;
        }
        self.subscriptions = current
            .iter()
            .filter_map(|(name, configs)| {
                let configs = configs
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                // The controller validated it; one that fails anyway matches no client.
                parse_subscription(name, &configs).ok()
            })
            .collect();
        self.parsed_from = current;
        self.subscription_version += 1;
    }

    /// Kafka's `clientInstance`: the cached instance, created or re-matched as needed, its
    /// expiry pushed back.
    fn instance(&mut self, id: Uuid, client: &ClientInfo, now_ms: u64) -> &mut Instance {
        self.maybe_sweep(now_ms);
        let stale = self
            .instances
            .get(&id)
            .is_none_or(|i| i.subscription_version < self.subscription_version);
        if stale {
            // A re-match keeps what the instance was first seen with (Kafka's metadata).
            let metadata = self
                .instances
                .get(&id)
                .map_or_else(|| client.clone(), |i| i.client.clone());
            if !self.instances.contains_key(&id) && self.instances.len() >= CACHE_MAX_SIZE {
                self.evict_one();
            }
            let instance = self.new_instance(id, metadata);
            self.instances.insert(id, instance);
            self.connections.insert(client.connection_id.clone(), id);
        }
        let instance = self
            .instances
            .get_mut(&id)
            .expect("the instance was just inserted or found");
        let keep = (interval(instance.push_interval_ms) * 3).max(CACHE_EXPIRY_MS);
        instance.expires_at_ms = now_ms.saturating_add(keep);
        instance
    }

    /// Kafka's `createClientInstance`: the subscriptions this client matches.
    fn new_instance(&self, id: Uuid, client: ClientInfo) -> Instance {
        let mut instance = Instance {
            client,
            subscription_id: 0,
            subscription_version: self.subscription_version,
            metrics: Vec::new(),
            push_interval_ms: INTERVAL_MS_DEFAULT,
            last_get_ms: 0,
            last_push_ms: 0,
            terminating: false,
            last_known_error: ErrorCode::None,
            expires_at_ms: 0,
        };
        let mut metrics: Vec<String> = Vec::new();
        let mut all = false;
        for s in &self.subscriptions {
            let matches = s
                .match_patterns
                .iter()
                .all(|p| p.pattern.is_match(&instance.attribute(id, &p.attribute)));
            if matches {
                all |= s.metrics.iter().any(|m| m == ALL_SUBSCRIBED_METRICS);
                for m in &s.metrics {
                    if !metrics.contains(m) {
                        metrics.push(m.clone());
                    }
                }
                instance.push_interval_ms = instance.push_interval_ms.min(s.interval_ms);
            }
        }
        if all {
            metrics = vec![ALL_SUBSCRIBED_METRICS.to_string()];
        }
        instance.metrics = java_hash_set_order(metrics);
        instance.subscription_id =
            subscription_id(&instance.metrics, instance.push_interval_ms, id);
        instance
    }

    /// [`Inner::sweep`] at most once a second: what each request pays.
    fn maybe_sweep(&mut self, now_ms: u64) {
        if now_ms >= self.next_sweep_ms {
            self.next_sweep_ms = now_ms.saturating_add(1000);
            self.sweep(now_ms);
        }
    }

    /// Forgets the instances whose time is up.
    fn sweep(&mut self, now_ms: u64) {
        self.instances.retain(|_, i| i.expires_at_ms > now_ms);
        let instances = &self.instances;
        self.connections.retain(|_, id| instances.contains_key(id));
    }

    /// Makes room for one instance: the one closest to expiring goes (Kafka's LRU cache
    /// evicts the least recently used, which is the same one).
    fn evict_one(&mut self) {
        if let Some(id) = self
            .instances
            .iter()
            .min_by_key(|(_, i)| i.expires_at_ms)
            .map(|(id, _)| *id)
        {
            self.instances.remove(&id);
        }
    }
}

/// Kafka's `computeSubscriptionId`: CRC32C of `metrics.toString() + pushIntervalMs` (Java's
/// `[a, b]` form) XOR the instance id's `hashCode`.
fn subscription_id(metrics: &[String], push_interval_ms: i32, id: Uuid) -> i32 {
    let text = format!("[{}]{push_interval_ms}", metrics.join(", "));
    let crc = crc32c::crc32c(text.as_bytes()) as i32;
    crc ^ java_uuid_hash(id)
}

/// Java's `Uuid.hashCode`: the two halves XORed, then the two ints of that XORed.
fn java_uuid_hash(id: Uuid) -> i32 {
    let mut hi = [0u8; 8];
    let mut lo = [0u8; 8];
    hi.copy_from_slice(&id.0[..8]);
    lo.copy_from_slice(&id.0[8..]);
    let xor = i64::from_be_bytes(hi) ^ i64::from_be_bytes(lo);
    ((xor >> 32) as i32) ^ (xor as i32)
}

/// Java's `String.hashCode` (over UTF-16 code units).
fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)))
}

/// The order a `java.util.HashSet` (default capacity, load factor 0.75) iterates `items`
/// inserted in this order: by bucket (`hash ^ hash >>> 16`, masked by the table size), then
/// insertion order within a bucket.
fn java_hash_set_order(items: Vec<String>) -> Vec<String> {
    let mut capacity: usize = 16;
    while items.len() * 4 > capacity * 3 {
        capacity *= 2;
    }
    let bucket = |s: &str| {
        let h = java_string_hash(s) as u32;
        ((h ^ (h >> 16)) as usize) & (capacity - 1)
    };
    let mut keyed: Vec<(usize, String)> = items.into_iter().map(|s| (bucket(&s), s)).collect();
    keyed.sort_by_key(|(b, _)| *b);
    keyed.into_iter().map(|(_, s)| s).collect()
}

#[cfg(test)]
mod tests;
