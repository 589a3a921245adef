//! The doctor's reading of a node's `/metrics`: a plain HTTP/1.1 GET (the nodes' exporter,
//! `metrics_http.rs`, answers one GET per connection) and a parser of Prometheus' text format
//! into samples. A scrape is mapped to its node by the `node="N"` label every kraftd metric
//! carries, since nodes do not advertise `metrics.port`: the operator lists the endpoints and
//! the doctor learns whose each is. The times around the request bound when the node read
//! its own clock, for the clock-skew rule.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long one scrape may take, connection included.
pub const SCRAPE_TIMEOUT: Duration = Duration::from_secs(3);

/// The most bytes of a response read (a kraftd scrape is some tens of KB).
const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// One sample line: `name{label="value",...} value`.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

impl Sample {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// One node's `/metrics`, with the doctor's clock (Unix ms) just before the request was
/// sent and just after the whole answer arrived.
#[derive(Debug, Clone, PartialEq)]
pub struct Scrape {
    pub address: String,
    pub node: i32,
    pub samples: Vec<Sample>,
    pub sent_ms: i64,
    pub received_ms: i64,
}

impl Scrape {
    /// Builds a scrape from `/metrics` text; the node is the `node` label of its samples.
    pub fn from_text(
        address: &str,
        text: &str,
        sent_ms: i64,
        received_ms: i64,
    ) -> Result<Self, String> {
        let samples = parse(text)?;
        let node = samples
            .iter()
            .find_map(|s| s.label("node"))
            .ok_or_else(|| "no sample carries a node label".to_string())?;
        let node = node
            .parse()
            .map_err(|_| format!("node label {node:?} is not a node id"))?;
        Ok(Scrape {
            address: address.to_string(),
            node,
            samples,
            sent_ms,
            received_ms,
        })
    }

    /// The value of the first sample named `name` whose labels include all of `labels`.
    pub fn get(&self, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
        self.samples
            .iter()
            .find(|s| s.name == name && labels.iter().all(|(k, v)| s.label(k) == Some(*v)))
            .map(|s| s.value)
    }

    /// Every sample named `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Sample> + 'a {
        self.samples.iter().filter(move |s| s.name == name)
    }

    /// The Raft role (`kafka_raft_metrics_current_state`'s `state` label).
    pub fn raft_state(&self) -> Option<&str> {
        self.all("kafka_raft_metrics_current_state")
            .find(|s| s.value == 1.0)
            .and_then(|s| s.label("state"))
    }

    /// A broker exports broker-metadata-metrics.
    pub fn is_broker(&self) -> bool {
        self.get(
            "kafka_broker_metadata_metrics_last_applied_record_offset",
            &[],
        )
        .is_some()
    }

    /// A controller is a voter: any Raft state but observer.
    pub fn is_controller(&self) -> bool {
        self.raft_state().is_some_and(|s| s != "observer")
    }
}

/// Parses Prometheus' text exposition format: comments and blank lines skipped, label
/// values unescaped (`\\`, `\"`, `\n`), `NaN`/`+Inf`/`-Inf` read, a trailing timestamp
/// ignored. A malformed line is an error naming it.
pub fn parse(text: &str) -> Result<Vec<Sample>, String> {
    let mut samples = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| format!("line {}: {why}: {line:?}", i + 1);
        let name_end = line
            .find(|c: char| c == '{' || c.is_whitespace())
            .ok_or_else(|| bad("no value"))?;
        let name = &line[..name_end];
        if name.is_empty() {
            return Err(bad("no metric name"));
        }
        let mut rest = &line[name_end..];
        let mut labels = Vec::new();
        if let Some(after) = rest.strip_prefix('{') {
            let b = after.as_bytes();
            let mut i = 0;
            loop {
                while i < b.len() && (b[i] == b',' || b[i].is_ascii_whitespace()) {
                    i += 1;
                }
                if i >= b.len() {
                    return Err(bad("unterminated labels"));
                }
                if b[i] == b'}' {
                    i += 1;
                    break;
                }
                let eq = after[i..]
                    .find('=')
                    .ok_or_else(|| bad("a label without ="))?
                    + i;
                let key = after[i..eq].trim().to_string();
                i = eq + 1;
                if b.get(i) != Some(&b'"') {
                    return Err(bad("a label value not in quotes"));
                }
                i += 1;
                let mut value = String::new();
                let mut chars = after[i..].char_indices();
                loop {
                    match chars.next() {
                        None => return Err(bad("unterminated label value")),
                        Some((j, '"')) => {
                            i += j + 1;
                            break;
                        }
                        Some((_, '\\')) => match chars.next() {
                            Some((_, 'n')) => value.push('\n'),
                            Some((_, c)) => value.push(c),
                            None => return Err(bad("unterminated label value")),
                        },
                        Some((_, c)) => value.push(c),
                    }
                }
                labels.push((key, value));
            }
            rest = &after[i..];
        }
        let value = rest
            .split_whitespace()
            .next()
            .ok_or_else(|| bad("no value"))?;
        let value = match value {
            "NaN" => f64::NAN,
            "+Inf" | "Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().map_err(|_| bad("the value is not a number"))?,
        };
        samples.push(Sample {
            name: name.to_string(),
            labels,
            value,
        });
    }
    Ok(samples)
}

/// GETs `http://address/metrics` and parses it; an error does not repeat the address.
pub async fn scrape(address: &str) -> Result<Scrape, String> {
    let work = async {
        let mut stream = TcpStream::connect(address)
            .await
            .map_err(|e| e.to_string())?;
        let sent_ms = kraftd_log::clock::unix_ms();
        let request =
            format!("GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
        stream
            .write_all(request.as_bytes())
            .await
            .map_err(|e| e.to_string())?;
        let mut body = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = stream.read(&mut chunk).await.map_err(|e| e.to_string())?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
            if body.len() > MAX_RESPONSE_BYTES {
                return Err(format!("the answer exceeds {MAX_RESPONSE_BYTES} bytes"));
            }
        }
        let received_ms = kraftd_log::clock::unix_ms();
        let text = String::from_utf8_lossy(&body);
        let (head, body) = text
            .split_once("\r\n\r\n")
            .ok_or_else(|| "not an HTTP answer".to_string())?;
        let status = head.lines().next().unwrap_or_default();
        if !status.contains(" 200") {
            return Err(format!("answered {status:?}"));
        }
        Scrape::from_text(address, body, sent_ms, received_ms)
    };
    tokio::time::timeout(SCRAPE_TIMEOUT, work)
        .await
        .map_err(|_| format!("no answer within {SCRAPE_TIMEOUT:?}"))?
}
