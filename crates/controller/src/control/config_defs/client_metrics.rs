//! The configs of a client-metrics subscription (ConfigResource CLIENT_METRICS, KIP-714), as
//! Kafka's `ClientMetricsConfigs`: `metrics` (metric name prefixes), `interval.ms` (the push
//! interval) and `match` (client selectors, each `<selector>=<regex>`). One home for their
//! definitions, for the controller's validation of a subscription as a whole
//! ([`validate_client_metrics`]) and for the broker's parsing of a subscription into what
//! its telemetry receiver matches clients against ([`parse_match_patterns`]).
//!
//! A selector's value is a Java regular expression in Kafka; kraftd compiles it with the
//! `regex` crate, anchored at both ends as Java's `Matcher.matches()` is. The two agree on
//! the common syntax; a pattern using what only Java has (look-around, back-references)
//! is refused as an illegal pattern.

use std::collections::BTreeMap;

use regex::Regex;

use super::{def, int, ConfigDef, ANY_LIST};

/// `metrics`: the metric name prefixes the subscription asks for.
pub const METRICS_CONFIG: &str = "metrics";
/// `interval.ms`: how often a matching client pushes.
pub const INTERVAL_MS_CONFIG: &str = "interval.ms";
/// `match`: the selectors a client must match (none: every client).
pub const MATCH_CONFIG: &str = "match";
/// Kafka's `INTERVAL_MS_DEFAULT`: five minutes.
pub const INTERVAL_MS_DEFAULT: i32 = 5 * 60 * 1000;
/// The shortest push interval a subscription may ask for.
const MIN_INTERVAL_MS: i32 = 100;
/// The longest push interval a subscription may ask for (one hour).
const MAX_INTERVAL_MS: i32 = 3_600_000;
/// `*` in `metrics`: every metric.
pub const ALL_SUBSCRIBED_METRICS: &str = "*";

/// The client attributes a `match` selector may name (Kafka's `ALLOWED_MATCH_PARAMS`).
pub const CLIENT_INSTANCE_ID: &str = "client_instance_id";
pub const CLIENT_ID: &str = "client_id";
pub const CLIENT_SOFTWARE_NAME: &str = "client_software_name";
pub const CLIENT_SOFTWARE_VERSION: &str = "client_software_version";
pub const CLIENT_SOURCE_ADDRESS: &str = "client_source_address";
pub const CLIENT_SOURCE_PORT: &str = "client_source_port";
const ALLOWED_MATCH_PARAMS: [&str; 6] = [
    CLIENT_INSTANCE_ID,
    CLIENT_ID,
    CLIENT_SOFTWARE_NAME,
    CLIENT_SOFTWARE_VERSION,
    CLIENT_SOURCE_ADDRESS,
    CLIENT_SOURCE_PORT,
];

/// Kafka's `ClientMetricsConfigs.CONFIG`, in name order.
pub const CLIENT_METRICS_CONFIGS: &[ConfigDef] = &[
    def(INTERVAL_MS_CONFIG, int(i32::MIN))
        .default("300000")
        .doc("Metrics push interval in milliseconds"),
    def(MATCH_CONFIG, ANY_LIST)
        .default("")
        .doc("Client match criteria"),
    def(METRICS_CONFIG, ANY_LIST)
        .default("")
        .doc("Telemetry metric name prefix list"),
];

/// The definition of a client-metrics config.
pub fn client_metrics_config_def(key: &str) -> Option<&'static ConfigDef> {
    CLIENT_METRICS_CONFIGS.iter().find(|d| d.name == key)
}

/// Why a subscription is refused: Kafka's `InvalidRequestException` or its
/// `InvalidConfigurationException` / `ConfigException` (INVALID_CONFIG).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClientMetricsConfigError {
    #[error("{0}")]
    InvalidRequest(String),
    #[error("{0}")]
    InvalidConfig(String),
}

/// One parsed `match` selector: the client attribute and the (fully anchored) pattern its
/// value must match.
#[derive(Debug, Clone)]
pub struct MatchPattern {
    pub attribute: String,
    pub pattern: Regex,
}

/// A subscription as a telemetry receiver uses it.
#[derive(Debug, Clone)]
pub struct ClientMetricsSubscription {
    pub name: String,
    /// The prefixes, without duplicates.
    pub metrics: Vec<String>,
    pub interval_ms: i32,
    pub match_patterns: Vec<MatchPattern>,
}

/// Kafka's `ClientMetricsConfigs.validate(name, configs)`: the whole set of a
/// subscription's configs after a change.
pub fn validate_client_metrics(
    name: &str,
    configs: &BTreeMap<String, String>,
) -> Result<(), ClientMetricsConfigError> {
    parse_subscription(name, configs).map(|_| ())
}

/// A subscription's configs parsed (defaults for the keys not set), validated as
/// [`validate_client_metrics`].
pub fn parse_subscription(
    name: &str,
    configs: &BTreeMap<String, String>,
) -> Result<ClientMetricsSubscription, ClientMetricsConfigError> {
    use ClientMetricsConfigError::{InvalidConfig, InvalidRequest};
    if name.is_empty() {
        return Err(InvalidRequest("Subscription name can't be empty".into()));
    }
    if let Some(key) = configs
        .keys()
        .find(|k| client_metrics_config_def(k).is_none())
    {
        return Err(InvalidRequest(format!(
            "Unknown client metrics configuration: {key}"
        )));
    }
    let metrics = match configs.get(METRICS_CONFIG) {
        Some(v) => parse_list(METRICS_CONFIG, v).map_err(InvalidConfig)?,
        None => Vec::new(),
    };
    let patterns = match configs.get(MATCH_CONFIG) {
        Some(v) => parse_list(MATCH_CONFIG, v).map_err(InvalidConfig)?,
        None => Vec::new(),
    };
    let interval_ms = match configs.get(INTERVAL_MS_CONFIG) {
        None => INTERVAL_MS_DEFAULT,
        Some(v) => {
            let n: i32 = v.trim().parse().map_err(|_| {
                InvalidConfig(format!(
                    "Invalid value {v} for configuration {INTERVAL_MS_CONFIG}: Not a number of type INT"
                ))
            })?;
            if !(MIN_INTERVAL_MS..=MAX_INTERVAL_MS).contains(&n) {
                return Err(InvalidRequest(format!(
                    "Invalid value {n} for {INTERVAL_MS_CONFIG}, interval must be between 100 and 3600000 (1 hour)"
                )));
            }
            n
        }
    };
    let match_patterns = parse_match_patterns(&patterns).map_err(InvalidConfig)?;
    Ok(ClientMetricsSubscription {
        name: name.to_string(),
        metrics,
        interval_ms,
        match_patterns,
    })
}

/// Kafka's `parseMatchingPatterns`: each `<selector>=<regex>` split at its `=` (exactly one,
/// with text after it), the selector one of [`ALLOWED_MATCH_PARAMS`], the regex valid.
pub fn parse_match_patterns(patterns: &[String]) -> Result<Vec<MatchPattern>, String> {
    let mut parsed: Vec<MatchPattern> = Vec::with_capacity(patterns.len());
    for pattern in patterns {
        let illegal = || format!("Illegal client matching pattern: {pattern}");
        // Java's `split("=")` drops trailing empty parts: "a=" is one part, "a=b=c" three.
        let mut parts: Vec<&str> = pattern.split('=').collect();
        while parts.len() > 1 && parts.last().is_some_and(|p| p.is_empty()) {
            parts.pop();
        }
        let [param, value] = parts[..] else {
            return Err(illegal());
        };
        let param = param.trim();
        if !ALLOWED_MATCH_PARAMS.contains(&param) {
            return Err(illegal());
        }
        let regex = Regex::new(&format!("^(?:{})$", value.trim())).map_err(|_| illegal())?;
        // A later selector of the same attribute replaces the earlier (Kafka's map).
        parsed.retain(|p| p.attribute != param);
        parsed.push(MatchPattern {
            attribute: param.to_string(),
            pattern: regex,
        });
    }
    Ok(parsed)
}

/// Kafka's LIST parsing with `ValidList.anyNonDuplicateValues(true, false)`: the trimmed
/// text split on commas and the spaces around them (`""` is the empty list); no item empty,
/// none repeated.
fn parse_list(key: &str, value: &str) -> Result<Vec<String>, String> {
    let trimmed = value.trim();
    if trimmed.is_empty() {
        return Ok(Vec::new());
    }
    let items: Vec<String> = trimmed.split(',').map(|s| s.trim().to_string()).collect();
    if items.iter().any(String::is_empty) {
        return Err(format!("Configuration '{key}' values must not be empty."));
    }
    let distinct: std::collections::BTreeSet<&String> = items.iter().collect();
    if distinct.len() != items.len() {
        return Err(format!(
            "Configuration '{key}' values must not be duplicated."
        ));
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn a_full_subscription_parses() {
        let s = parse_subscription(
            "sub1",
            &configs(&[
                (
                    "metrics",
                    "org.apache.kafka.producer., org.apache.kafka.consumer.",
                ),
                ("interval.ms", "1000"),
                (
                    "match",
                    "client_id=perf-.*,client_software_name=apache-kafka-java",
                ),
            ]),
        )
        .expect("valid");
        assert_eq!(
            s.metrics,
            ["org.apache.kafka.producer.", "org.apache.kafka.consumer."]
        );
        assert_eq!(s.interval_ms, 1000);
        assert_eq!(s.match_patterns.len(), 2);
        assert!(s.match_patterns[0].pattern.is_match("perf-1"));
        // Anchored as Java's matches(): a substring does not match.
        assert!(!s.match_patterns[0].pattern.is_match("xperf-1"));
    }

    #[test]
    fn kafkas_refusals() {
        use ClientMetricsConfigError::*;
        let check = |name: &str, pairs: &[(&str, &str)]| parse_subscription(name, &configs(pairs));
        assert_eq!(
            check("", &[]).unwrap_err(),
            InvalidRequest("Subscription name can't be empty".into())
        );
        assert_eq!(
            check("s", &[("foo", "1")]).unwrap_err(),
            InvalidRequest("Unknown client metrics configuration: foo".into())
        );
        assert_eq!(
            check("s", &[("interval.ms", "99")]).unwrap_err(),
            InvalidRequest(
                "Invalid value 99 for interval.ms, interval must be between 100 and 3600000 (1 hour)"
                    .into()
            )
        );
        assert!(check("s", &[("interval.ms", "3600000")]).is_ok());
        assert!(matches!(
            check("s", &[("interval.ms", "x")]),
            Err(InvalidConfig(_))
        ));
        for bad in [
            "client_id",
            "client_id=",
            "a=b=c",
            "host=x",
            "client_id=(",
            "=x",
        ] {
            assert_eq!(
                check("s", &[("match", bad)]).unwrap_err(),
                InvalidConfig(format!("Illegal client matching pattern: {bad}")),
                "{bad}"
            );
        }
        assert_eq!(
            check("s", &[("metrics", "a,a")]).unwrap_err(),
            InvalidConfig("Configuration 'metrics' values must not be duplicated.".into())
        );
        assert_eq!(
            check("s", &[("metrics", "a,,b")]).unwrap_err(),
            InvalidConfig("Configuration 'metrics' values must not be empty.".into())
        );
        // The empty list and every metric.
        assert!(check("s", &[("metrics", "")]).is_ok());
        assert!(check("s", &[("metrics", "*")]).is_ok());
    }
}
