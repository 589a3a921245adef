//! Client quotas as Kafka enforces them (KIP-13 bandwidth, KIP-124 request time, KIP-219
//! throttle communication, KIP-599 controller mutations): what both roles share. The broker
//! throttles produce and fetch bandwidth and request time (`kraftd_broker::server::quota`);
//! the controller throttles topic and partition mutations ([`mutation`]). Both read the
//! limits from the metadata image through the [`ClientQuotas`](crate::publisher::ClientQuotas)
//! handle, fed by its publisher on every committed change.
//!
//! - [`index`]: which entity's quota applies to a user and client id (Kafka's
//!   `DefaultQuotaCallback` precedence) and the tags its rate is measured under.
//! - [`token_bucket`]: Kafka's `TokenBucket`, the controller mutation quota's measure.
//! - [`mutation`]: Kafka's `ControllerMutationQuotaManager` with its strict (KIP-599 aware
//!   versions: THROTTLING_QUOTA_EXCEEDED per topic) and permissive (older versions:
//!   accepted, then throttled) quotas.
//! - [`response`]: `throttle_time_ms` on any response that has it, and which versions'
//!   clients throttle themselves (KIP-219).
//!
//! Time is handed in as milliseconds wherever a decision is made, so the math is tested
//! with explicit clocks; only the edges read the wall clock.

pub mod index;
pub mod mutation;
pub mod response;
pub mod token_bucket;

#[cfg(test)]
mod tests;

pub use index::QuotaIndex;
pub use mutation::{ControllerMutationQuota, ControllerMutationQuotaManager};
pub use response::{client_throttles, set_throttle_time_ms, throttle_time_ms};
pub use token_bucket::TokenBucket;

use std::collections::BTreeMap;

/// A client quota's kind: Kafka's `QuotaType` for client quotas, each with its own manager.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaKind {
    /// `producer_byte_rate`: bytes of Produce requests per second.
    Produce,
    /// `consumer_byte_rate`: bytes of consumer Fetch responses per second.
    Fetch,
    /// `request_percentage`: request handling time, as a percentage of one thread.
    Request,
    /// `controller_mutation_rate`: partitions created or deleted per second.
    ControllerMutation,
}

impl QuotaKind {
    pub const ALL: [QuotaKind; 4] = [
        QuotaKind::Produce,
        QuotaKind::Fetch,
        QuotaKind::Request,
        QuotaKind::ControllerMutation,
    ];

    /// The quota's key in ClientQuotaRecords and AlterClientQuotas.
    pub fn config_key(self) -> &'static str {
        match self {
            QuotaKind::Produce => "producer_byte_rate",
            QuotaKind::Fetch => "consumer_byte_rate",
            QuotaKind::Request => "request_percentage",
            QuotaKind::ControllerMutation => "controller_mutation_rate",
        }
    }

    /// Kafka's `QuotaType.toString()`: the metrics group (`kafka.server:type=Produce`).
    pub fn name(self) -> &'static str {
        match self {
            QuotaKind::Produce => "Produce",
            QuotaKind::Fetch => "Fetch",
            QuotaKind::Request => "Request",
            QuotaKind::ControllerMutation => "ControllerMutation",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Kafka's quota metric tags: the user and client id a sensor measures, `""` for a part the
/// applicable quota does not name (a `/clients/<default>` quota is measured per client id
/// whatever the user, a `/users/<user>` quota per user whatever the client id).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct QuotaTags {
    pub user: String,
    pub client_id: String,
}

impl QuotaTags {
    pub fn new(user: &str, client_id: &str) -> QuotaTags {
        QuotaTags {
            user: user.to_string(),
            client_id: client_id.to_string(),
        }
    }
}

/// The sampling of a quota's rate: Kafka's `quota.window.num` samples of
/// `quota.window.size.seconds` each (and `controller.quota.window.*` for mutations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaWindow {
    /// `quota.window.num` (11: ten whole windows and the current one).
    pub samples: usize,
    /// `quota.window.size.seconds` (1).
    pub size_seconds: u64,
}

impl Default for QuotaWindow {
    fn default() -> Self {
        QuotaWindow {
            samples: 11,
            size_seconds: 1,
        }
    }
}

impl QuotaWindow {
    /// `quota.window.num` and `quota.window.size.seconds` (or the `controller.` ones when
    /// `prefix` is `controller.`) from a properties map; a bad value names its key.
    pub fn from_properties(
        props: &BTreeMap<String, String>,
        prefix: &str,
    ) -> Result<QuotaWindow, String> {
        let mut window = QuotaWindow::default();
        let read = |name: &str| -> Result<Option<u64>, String> {
            let key = format!("{prefix}{name}");
            match props.get(&key) {
                None => Ok(None),
                Some(v) => match v.trim().parse::<u64>() {
                    Ok(n) if n >= 1 && n <= i32::MAX as u64 => Ok(Some(n)),
                    _ => Err(format!(
                        "invalid value {v:?} for {key}: expected an integer of at least 1"
                    )),
                },
            }
        };
        if let Some(n) = read("quota.window.num")? {
            window.samples = n as usize;
        }
        if let Some(n) = read("quota.window.size.seconds")? {
            window.size_seconds = n;
        }
        Ok(window)
    }

    /// One sample's length.
    pub fn window_ms(self) -> u64 {
        self.size_seconds * 1000
    }

    /// The windowed-rate sampling for a quota sensor.
    pub fn sample_config(self) -> kraftd_raft::driver::stats::SampleConfig {
        kraftd_raft::driver::stats::SampleConfig {
            window_ms: self.window_ms(),
            samples: self.samples,
        }
    }
}

pub use kraftd_net::stats::throttle_time;

/// A throttle time as the `i32` milliseconds responses carry.
pub fn throttle_ms_i32(ms: u64) -> i32 {
    i32::try_from(ms).unwrap_or(i32::MAX)
}

/// Kafka's `ThrottlingQuotaExceededException`: a strict mutation quota refused a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottlingQuotaExceeded {
    /// How long until the quota allows mutations again.
    pub throttle_time_ms: u64,
}

impl ThrottlingQuotaExceeded {
    /// Kafka's `Errors.THROTTLING_QUOTA_EXCEEDED.message()`, what the topic's error says.
    pub const MESSAGE: &'static str = "The throttling quota has been exceeded.";
}

/// What CreateTopics, DeleteTopics and CreatePartitions charge for each topic that passed
/// every other check (Kafka's `ControllerRequestContext.applyPartitionChangeQuota`): the
/// partitions it creates or deletes. A strict quota refuses once exhausted; a permissive one
/// always accepts (and throttles the client afterwards).
pub trait MutationQuota {
    fn record(&mut self, partitions: u32) -> Result<(), ThrottlingQuotaExceeded>;
}

/// No quota: every mutation is accepted (Kafka's `UNBOUNDED_CONTROLLER_MUTATION_QUOTA`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Unbounded;

impl MutationQuota for Unbounded {
    fn record(&mut self, _partitions: u32) -> Result<(), ThrottlingQuotaExceeded> {
        Ok(())
    }
}

/// One quota metric in Prometheus text: `kafka_server_<Type>_<metric>` (Kafka's JMX
/// `kafka.server:type=<Type>,user=..,client-id=..` attribute `<metric>`, `-` as `_`), one
/// sample per sensor labelled with the node, user and client id. Nothing without sensors.
pub fn write_quota_metric(
    out: &mut String,
    kind: QuotaKind,
    metric: &str,
    help: &str,
    node_id: i32,
    samples: &mut [(QuotaTags, f64)],
) {
    use std::fmt::Write;
    if samples.is_empty() {
        return;
    }
    samples.sort_by(|a, b| a.0.cmp(&b.0));
    let name = format!("kafka_server_{}_{metric}", kind.name());
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    for (tags, value) in samples.iter() {
        let _ = writeln!(
            out,
            "{name}{{node=\"{node_id}\",user=\"{}\",client_id=\"{}\"}} {}",
            escape_label(&tags.user),
            escape_label(&tags.client_id),
            prometheus_value(*value)
        );
    }
}

/// A label value with Prometheus' escapes (backslash, quote, newline).
fn escape_label(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A float as Prometheus writes it (`NaN`, `+Inf`, `-Inf`).
fn prometheus_value(v: f64) -> String {
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
