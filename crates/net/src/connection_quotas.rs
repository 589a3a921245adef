//! Kafka's `ConnectionQuotas` (`kafka.network.SocketServer`): the limits every accepted
//! connection of one role's listeners passes before it is served, shared by those listeners
//! and reconfigured live (Kafka's `DynamicListenerConfig` and the socket server's own
//! `reconfigure`; the binary maps the configs onto [`ConnectionQuotaConfig`]).
//!
//! In Kafka's order, for each connection accepted on a listener:
//! 1. the broker-wide (`max.connection.creation.rate`) and the listener's
//!    (`listener.name.<l>.max.connection.creation.rate`) creation rates are recorded; over
//!    either quota, the accept loop waits out the throttle time (bounded by one quota
//!    window), then waits until the broker (`max.connections`) and the listener
//!    (`listener.name.<l>.max.connections`) have a free slot — new connections queue in the
//!    kernel's backlog meanwhile. The inter-broker listener, when the role has others, is
//!    protected: neither the broker-wide cap nor the broker-wide rate holds it back;
//! 2. the source address's creation rate (the `connection_creation_rate` client quota of
//!    entity type `ip`, or its default) is recorded; over it, the connection is refused,
//!    held open for the throttle time and then closed (Kafka's `ConnectionThrottledException`
//!    and delayed close), and not counted against the broker or listener rates;
//! 3. the address's open connections are checked against `max.connections.per.ip` or its
//!    override in `max.connections.per.ip.overrides`: at the limit, the connection is closed
//!    at once (Kafka's `TooManyConnectionsException`).
//!
//! Rates are measured as Kafka's `Rate` with a quota (`quota.window.num` samples of
//! `quota.window.size.seconds`), so a fresh broker lets a burst of up to `rate × (samples −
//! 1) × window` connections in before throttling, as Kafka does. Not ported: Kafka's
//! processors closing the least recently used connection of an unprotected listener when the
//! protected one pushed the total over `max.connections`, and `AcceptorBlockedPercent`.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;
use tracing::{debug, info};

use super::stats::{throttle_time, Rate, SampleConfig, SampledStat};

/// Kafka's value for "no limit" of every count and rate here (`Integer.MAX_VALUE`).
pub const UNLIMITED: i32 = i32::MAX;

/// Kafka's quota window defaults: `quota.window.num` 11 samples of
/// `quota.window.size.seconds` 1.
pub const QUOTA_WINDOW_DEFAULT: SampleConfig = SampleConfig {
    window_ms: 1000,
    samples: 11,
};

/// Kafka's `ConnectionQuotaEntity` sensor expiry for an address's rate: an hour unused.
const IP_SENSOR_EXPIRY_MS: u64 = 3_600_000;

/// The limits, as the configs give them (unset: [`UNLIMITED`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionQuotaConfig {
    /// `max.connections.per.ip`.
    pub max_connections_per_ip: i32,
    /// `max.connections.per.ip.overrides`, resolved to addresses.
    pub max_connections_per_ip_overrides: HashMap<IpAddr, i32>,
    /// `max.connections`: every unprotected listener's connections together.
    pub max_connections: i32,
    /// `max.connection.creation.rate`, connections per second over every unprotected
    /// listener.
    pub max_connection_creation_rate: i32,
    /// `listener.name.<l>.max.connections` and `listener.name.<l>.max.connection.creation.rate`
    /// by listener name; a listener not named has no limit of its own.
    pub listeners: BTreeMap<String, ListenerQuotaConfig>,
}

/// One listener's own limits (Kafka's `ListenerConnectionQuota`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListenerQuotaConfig {
    pub max_connections: i32,
    pub max_connection_creation_rate: i32,
}

impl Default for ListenerQuotaConfig {
    fn default() -> Self {
        ListenerQuotaConfig {
            max_connections: UNLIMITED,
            max_connection_creation_rate: UNLIMITED,
        }
    }
}

impl Default for ConnectionQuotaConfig {
    fn default() -> Self {
        ConnectionQuotaConfig {
            max_connections_per_ip: UNLIMITED,
            max_connections_per_ip_overrides: HashMap::new(),
            max_connections: UNLIMITED,
            max_connection_creation_rate: UNLIMITED,
            listeners: BTreeMap::new(),
        }
    }
}

/// Why a connection is not served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Kafka's `TooManyConnectionsException`: close it now.
    TooManyConnections { ip: IpAddr, max: i32 },
    /// Kafka's `ConnectionThrottledException`: hold it for `throttle`, then close it.
    Throttled { ip: IpAddr, throttle: Duration },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::TooManyConnections { ip, max } => {
                write!(f, "Too many connections from /{ip} (maximum = {max})")
            }
            Refused::Throttled { ip, throttle } => write!(
                f,
                "connection rate quota of /{ip} exceeded: closing in {} ms",
                throttle.as_millis()
            ),
        }
    }
}

/// The connection limits of one role's listeners. Shared by its listeners' accept loops.
#[derive(Debug)]
pub struct ConnectionQuotas {
    state: Mutex<State>,
    /// Woken when a connection closes or a limit changes: waiting accept loops re-check.
    changed: Notify,
    /// The quota sensors' sampling (`quota.window.num` × `quota.window.size.seconds`).
    window: SampleConfig,
    /// The longest throttle: one quota window (Kafka's `maxThrottleTimeMs`).
    max_throttle_ms: u64,
    /// The zero of the millisecond clock the sensors record on.
    epoch: std::time::Instant,
}

/// A served connection's place in the counts, given back when dropped.
#[derive(Debug)]
pub struct ConnectionSlot {
    quotas: Arc<ConnectionQuotas>,
    listener: Arc<str>,
    ip: IpAddr,
}

#[derive(Debug)]
struct State {
    config: ConnectionQuotaConfig,
    /// `inter.broker.listener.name`, protected when the role has other listeners.
    inter_broker_listener: Option<String>,
    counts: HashMap<IpAddr, u64>,
    total: u64,
    listeners: BTreeMap<String, ListenerState>,
    broker_rate: QuotaSensor,
    /// The `connection_creation_rate` quota of entity `ip` by address, and the default
    /// entity's ([`UNLIMITED`] when unset).
    ip_rates: HashMap<IpAddr, i32>,
    ip_rate_default: i32,
    ip_sensors: HashMap<IpAddr, IpSensor>,
}

#[derive(Debug)]
struct ListenerState {
    count: u64,
    rate: QuotaSensor,
    /// `connection-accept-throttle-time`: the average of the non-zero throttle times the
    /// broker or listener rate imposed.
    throttle: SampledStat,
    /// `ip-connection-accept-throttle-time`: the same for addresses over their rate.
    ip_throttle: SampledStat,
}

/// A rate with its quota (Kafka's sensor with a `Quota` bound).
#[derive(Debug)]
struct QuotaSensor {
    rate: Rate,
    limit: i32,
}

#[derive(Debug)]
struct IpSensor {
    sensor: QuotaSensor,
    last_ms: u64,
}

impl ConnectionQuotas {
    /// Limits from `config`; rates sampled as `window` (Kafka's quota window).
    pub fn new(config: ConnectionQuotaConfig, window: SampleConfig) -> Arc<Self> {
        let broker_rate = QuotaSensor::new(window, config.max_connection_creation_rate);
        Arc::new(ConnectionQuotas {
            state: Mutex::new(State {
                config,
                inter_broker_listener: None,
                counts: HashMap::new(),
                total: 0,
                listeners: BTreeMap::new(),
                broker_rate,
                ip_rates: HashMap::new(),
                ip_rate_default: UNLIMITED,
                ip_sensors: HashMap::new(),
            }),
            changed: Notify::new(),
            window,
            max_throttle_ms: window.window_ms,
            epoch: std::time::Instant::now(),
        })
    }

    /// Names the inter-broker listener, which the broker-wide limits do not hold back once
    /// the role has another listener (Kafka's `protectedListener`).
    pub fn set_inter_broker_listener(&self, listener: Option<String>) {
        self.lock().inter_broker_listener = listener;
    }

    /// A listener starts accepting (Kafka's `addListener`): its own limits apply from now.
    pub fn add_listener(&self, listener: &str) {
        let window = self.window;
        let mut state = self.lock();
        let own = state
            .config
            .listeners
            .get(listener)
            .copied()
            .unwrap_or_default();
        state
            .listeners
            .entry(listener.to_string())
            .or_insert_with(|| ListenerState {
                count: 0,
                rate: QuotaSensor::new(window, own.max_connection_creation_rate),
                throttle: SampledStat::new(SampleConfig::default()),
                ip_throttle: SampledStat::new(SampleConfig::default()),
            });
        drop(state);
        self.changed.notify_waiters();
    }

    /// New limits (Kafka's `reconfigure` of the socket server and of each listener's
    /// quota). A connection already waiting out a rate throttle keeps its delay, as in
    /// Kafka; one waiting for a slot re-checks at once.
    pub fn reconfigure(&self, config: ConnectionQuotaConfig) {
        let mut state = self.lock();
        if state.config == config {
            return;
        }
        info!(
            max_connections = config.max_connections,
            max_connections_per_ip = config.max_connections_per_ip,
            overrides = ?config.max_connections_per_ip_overrides,
            max_connection_creation_rate = config.max_connection_creation_rate,
            listeners = ?config.listeners,
            "updating connection quotas"
        );
        state.broker_rate.limit = config.max_connection_creation_rate;
        let State {
            listeners,
            config: ref mut current,
            ..
        } = &mut *state;
        for (name, listener) in listeners.iter_mut() {
            let own = config.listeners.get(name).copied().unwrap_or_default();
            listener.rate.limit = own.max_connection_creation_rate;
        }
        *current = config;
        drop(state);
        self.changed.notify_waiters();
    }

    /// The `connection_creation_rate` quota of one address (`Some(ip)`) or of the default
    /// `ip` entity (`None`); `None` as the rate removes it (Kafka's
    /// `updateIpConnectionRateQuota`).
    pub fn update_ip_connection_rate(&self, ip: Option<IpAddr>, rate: Option<i32>) {
        let mut state = self.lock();
        match ip {
            Some(ip) => {
                match rate {
                    Some(rate) => state.ip_rates.insert(ip, rate),
                    None => state.ip_rates.remove(&ip),
                };
                let limit = state.ip_rate(ip);
                if let Some(s) = state.ip_sensors.get_mut(&ip) {
                    s.sensor.limit = limit;
                }
            }
            None => {
                state.ip_rate_default = rate.unwrap_or(UNLIMITED);
                let State {
                    ip_sensors,
                    ip_rates,
                    ip_rate_default,
                    ..
                } = &mut *state;
                for (ip, s) in ip_sensors.iter_mut() {
                    s.sensor.limit = ip_rates.get(ip).copied().unwrap_or(*ip_rate_default);
                }
            }
        }
    }

    /// Replaces every address's `connection_creation_rate` quota at once: `default` for
    /// the default `ip` entity, `by_ip` for named addresses (what the client-quota
    /// publisher hands over after any change).
    pub fn set_ip_connection_rates(&self, default: Option<i32>, by_ip: HashMap<IpAddr, i32>) {
        let mut state = self.lock();
        if state.ip_rates == by_ip && state.ip_rate_default == default.unwrap_or(UNLIMITED) {
            return;
        }
        state.ip_rates = by_ip;
        drop(state);
        self.update_ip_connection_rate(None, default);
    }

    /// Admits a connection accepted on `listener` from `ip`, waiting while the broker or
    /// the listener is throttled or full (Kafka's `ConnectionQuotas.inc`). The slot is
    /// given back when the returned guard drops.
    pub async fn admit(
        self: &Arc<Self>,
        listener: &str,
        ip: IpAddr,
    ) -> Result<ConnectionSlot, Refused> {
        self.wait_for_connection_slot(listener).await;
        let now_ms = self.now_ms();
        let mut state = self.lock();
        state.record_ip_connection_maybe_throttle(
            listener,
            ip,
            now_ms,
            self.max_throttle_ms,
            self.window,
        )?;
        let count = state.counts.get(&ip).copied().unwrap_or(0);
        let max = state.max_connections_per_ip(ip);
        if count >= max.max(0) as u64 {
            return Err(Refused::TooManyConnections { ip, max });
        }
        *state.counts.entry(ip).or_insert(0) += 1;
        state.total += 1;
        if let Some(l) = state.listeners.get_mut(listener) {
            l.count += 1;
        }
        Ok(ConnectionSlot {
            quotas: Arc::clone(self),
            listener: Arc::from(listener),
            ip,
        })
    }

    /// Open connections from `ip` (Kafka's `get`).
    pub fn connections_from(&self, ip: IpAddr) -> u64 {
        self.lock().counts.get(&ip).copied().unwrap_or(0)
    }

    /// Kafka's `waitForConnectionSlot`: records the broker and listener rates once, then
    /// waits out the throttle and for a free slot.
    async fn wait_for_connection_slot(&self, listener: &str) {
        let start_ms = self.now_ms();
        let throttle_ms = {
            let mut state = self.lock();
            state.record_connection_and_get_throttle_ms(listener, start_ms, self.max_throttle_ms)
        };
        let deadline = Instant::now() + Duration::from_millis(throttle_ms);
        if throttle_ms > 0 {
            debug!(
                listener,
                throttle_ms, "connection creation rate exceeded: delaying accept"
            );
        }
        loop {
            let notified = self.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let now = Instant::now();
            if now >= deadline && self.lock().connection_slot_available(listener) {
                return;
            }
            if now < deadline {
                tokio::select! {
                    () = &mut notified => {}
                    () = tokio::time::sleep_until(deadline) => {}
                }
            } else {
                notified.await;
            }
        }
    }

    fn release(&self, listener: &str, ip: IpAddr) {
        let mut state = self.lock();
        match state.counts.get_mut(&ip) {
            Some(n) if *n > 1 => *n -= 1,
            Some(_) => {
                state.counts.remove(&ip);
            }
            None => debug_assert!(false, "released a connection of {ip} never counted"),
        }
        state.total = state.total.saturating_sub(1);
        if let Some(l) = state.listeners.get_mut(listener) {
            l.count = l.count.saturating_sub(1);
        }
        drop(state);
        self.changed.notify_waiters();
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        self.quotas.release(&self.listener, self.ip);
    }
}

impl State {
    fn protected_listener(&self, listener: &str) -> bool {
        self.inter_broker_listener.as_deref() == Some(listener) && self.listeners.len() > 1
    }

    fn connection_slot_available(&self, listener: &str) -> bool {
        let own_max = self
            .config
            .listeners
            .get(listener)
            .map_or(UNLIMITED, |l| l.max_connections);
        let count = self.listeners.get(listener).map_or(0, |l| l.count);
        if count >= own_max.max(0) as u64 {
            false
        } else if self.protected_listener(listener) {
            true
        } else {
            self.total < self.config.max_connections.max(0) as u64
        }
    }

    fn max_connections_per_ip(&self, ip: IpAddr) -> i32 {
        self.config
            .max_connections_per_ip_overrides
            .get(&ip)
            .copied()
            .unwrap_or(self.config.max_connections_per_ip)
    }

    fn ip_rate(&self, ip: IpAddr) -> i32 {
        self.ip_rates
            .get(&ip)
            .copied()
            .unwrap_or(self.ip_rate_default)
    }

    /// Kafka's `recordConnectionAndGetThrottleTimeMs`: the longer of the broker's and the
    /// listener's delays (the broker's not for the protected listener).
    fn record_connection_and_get_throttle_ms(
        &mut self,
        listener: &str,
        now_ms: u64,
        max_ms: u64,
    ) -> u64 {
        let broker_ms = if self.protected_listener(listener) {
            0
        } else {
            self.broker_rate.record(now_ms, max_ms)
        };
        let Some(l) = self.listeners.get_mut(listener) else {
            return 0;
        };
        let throttle_ms = broker_ms.max(l.rate.record(now_ms, max_ms));
        if throttle_ms > 0 {
            l.throttle.record(throttle_ms as f64, now_ms);
        }
        throttle_ms
    }

    /// Kafka's `recordIpConnectionMaybeThrottle`: over its rate, the address's connection
    /// is refused and taken back from the broker's, listener's and address's rates.
    fn record_ip_connection_maybe_throttle(
        &mut self,
        listener: &str,
        ip: IpAddr,
        now_ms: u64,
        max_ms: u64,
        window: SampleConfig,
    ) -> Result<(), Refused> {
        let limit = self.ip_rate(ip);
        if limit == UNLIMITED {
            return Ok(());
        }
        // Unused sensors expire, as Kafka's do after an hour.
        if self.ip_sensors.len() > 1024 {
            self.ip_sensors
                .retain(|_, s| now_ms.saturating_sub(s.last_ms) < IP_SENSOR_EXPIRY_MS);
        }
        let s = self.ip_sensors.entry(ip).or_insert_with(|| IpSensor {
            sensor: QuotaSensor::new(window, limit),
            last_ms: now_ms,
        });
        s.last_ms = now_ms;
        let throttle_ms = s.sensor.record(now_ms, max_ms);
        if throttle_ms == 0 {
            return Ok(());
        }
        s.sensor.rate.record(-1.0, now_ms);
        let protected = self.protected_listener(listener);
        if !protected {
            self.broker_rate.rate.record(-1.0, now_ms);
        }
        if let Some(l) = self.listeners.get_mut(listener) {
            l.ip_throttle.record(throttle_ms as f64, now_ms);
            l.rate.rate.record(-1.0, now_ms);
        }
        Err(Refused::Throttled {
            ip,
            throttle: Duration::from_millis(throttle_ms),
        })
    }
}

impl QuotaSensor {
    fn new(window: SampleConfig, limit: i32) -> Self {
        QuotaSensor {
            rate: Rate::new(window),
            limit,
        }
    }

    /// Records one connection; the throttle time when the rate is then over the quota
    /// (Kafka's `recordAndGetThrottleTimeMs` with `QuotaUtils.boundedThrottleTime`).
    fn record(&mut self, now_ms: u64, max_ms: u64) -> u64 {
        self.rate.record(1.0, now_ms);
        if self.limit == UNLIMITED {
            return 0;
        }
        let rate = self.rate.measure(now_ms);
        let limit = f64::from(self.limit);
        if rate <= limit {
            return 0;
        }
        let window_ms = self.rate.window_size_ms(now_ms);
        throttle_time(rate, limit, window_ms).min(max_ms)
    }
}

/// Kafka's socket-server quota metrics of a node's roles in Prometheus text, as
/// `docs/metrics.md` maps them (`kafka.server:type=socket-server-metrics`):
/// `broker-connection-accept-rate`, per listener `connection-accept-rate`,
/// `connection-accept-throttle-time` and `ip-connection-accept-throttle-time`, and per
/// address with a rate quota `connection-accept-rate{ip}`. The roles of a combined node
/// have listeners of their own; their broker-wide and address rates are summed, as Kafka's
/// roles share those sensors in one metrics registry.
pub fn write_prometheus(roles: &[Arc<ConnectionQuotas>], node_id: i32, out: &mut String) {
    const PREFIX: &str = "kafka_server_socket_server_metrics";
    if roles.is_empty() {
        return;
    }
    let mut broker = 0.0;
    let mut listeners: Vec<(String, [f64; 3])> = Vec::new();
    let mut ips: BTreeMap<IpAddr, f64> = BTreeMap::new();
    for quotas in roles {
        let now_ms = quotas.now_ms();
        let mut state = quotas.lock();
        broker += state.broker_rate.rate.measure(now_ms);
        for (name, l) in state.listeners.iter_mut() {
            let values = [
                l.rate.rate.measure(now_ms),
                l.throttle.avg(now_ms),
                l.ip_throttle.avg(now_ms),
            ];
            listeners.push((name.clone(), values));
        }
        for (ip, s) in state.ip_sensors.iter_mut() {
            *ips.entry(*ip).or_default() += s.sensor.rate.measure(now_ms);
        }
    }
    let _ = writeln!(out, "# HELP {PREFIX}_broker_connection_accept_rate Connections accepted per second over the unprotected listeners (Kafka's broker-connection-accept-rate).");
    let _ = writeln!(out, "# TYPE {PREFIX}_broker_connection_accept_rate gauge");
    let _ = writeln!(
        out,
        "{PREFIX}_broker_connection_accept_rate{{node=\"{node_id}\"}} {}",
        value(broker)
    );
    let families: [(&str, &str); 3] = [
        ("connection_accept_rate", "Connections accepted per second, per listener or per address with a rate quota (Kafka's connection-accept-rate)."),
        ("connection_accept_throttle_time", "Average of the non-zero delays the broker or listener creation rate imposed on accepts, ms (Kafka's connection-accept-throttle-time)."),
        ("ip_connection_accept_throttle_time", "Average of the non-zero delays before closing connections of addresses over their rate, ms (Kafka's ip-connection-accept-throttle-time)."),
    ];
    for (i, (name, help)) in families.iter().enumerate() {
        let _ = writeln!(out, "# HELP {PREFIX}_{name} {help}");
        let _ = writeln!(out, "# TYPE {PREFIX}_{name} gauge");
        for (listener, values) in &listeners {
            let _ = writeln!(
                out,
                "{PREFIX}_{name}{{node=\"{node_id}\",listener=\"{listener}\"}} {}",
                value(values[i])
            );
        }
        if i == 0 {
            for (ip, rate) in &ips {
                let _ = writeln!(
                    out,
                    "{PREFIX}_{name}{{node=\"{node_id}\",ip=\"{ip}\"}} {}",
                    value(*rate)
                );
            }
        }
    }
}

/// A float as Prometheus writes it.
fn value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else {
        format!("{v}")
    }
}

/// Kafka's parse of `max.connections.per.ip.overrides` (`Csv.parseCsvMap`, then each count
/// as an int, then `Utils.validHostPattern` on each host), with Kafka's messages: entries
/// `host:count` separated by commas, the count after the last colon (so IPv6 addresses
/// work). The hosts are returned as written.
pub fn parse_max_connections_per_ip_overrides(value: &str) -> Result<Vec<(String, i32)>, String> {
    const KEY: &str = "max.connections.per.ip.overrides";
    let mut parsed: Vec<(String, i32)> = Vec::new();
    if value.is_empty() {
        return Ok(parsed);
    }
    for entry in split_csv(value) {
        let Some(colon) = entry.rfind(':') else {
            return Err(format!(
                "Error parsing configuration property '{KEY}': begin 0, end -1, length {}",
                entry.encode_utf16().count()
            ));
        };
        let (host, count) = (entry[..colon].trim(), entry[colon + 1..].trim());
        let count: i32 = count
            .parse()
            .map_err(|_| format!("For input string: \"{count}\""))?;
        match parsed.iter_mut().find(|(h, _)| h == host) {
            Some(existing) => existing.1 = count,
            None => parsed.push((host.to_string(), count)),
        }
    }
    let invalid: Vec<&str> = parsed
        .iter()
        .map(|(h, _)| h.as_str())
        .filter(|h| !valid_host_pattern(h))
        .collect();
    if !invalid.is_empty() {
        return Err(format!(
            "{KEY} contains invalid addresses : {}",
            invalid.join(",")
        ));
    }
    Ok(parsed)
}

/// Kafka's `str.split("\\s*,\\s*")`, whose trailing empty strings Java drops (the
/// entries are trimmed after, so the whitespace kept at either end does not matter).
fn split_csv(value: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = value.split(',').map(str::trim).collect();
    while parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// Kafka's `Utils.validHostPattern`: letters, digits and `-%._:` only.
fn valid_host_pattern(host: &str) -> bool {
    host.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '%' | '.' | '_' | ':'))
}

#[cfg(test)]
mod tests;
