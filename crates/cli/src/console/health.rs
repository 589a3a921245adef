//! The console's health page: `kraftd doctor`'s rules ([`crate::doctor::rules::diagnose`])
//! run inside the node on the facts the doctor gathers — this node's own `/metrics` (the
//! render, not a scrape; two rounds, the previous computation's and this one's, as
//! `doctor --watch` compares rounds), the Raft leader's DescribeQuorum through the
//! controller bootstrap this node was configured with, and the brokers' view of brokers
//! and partitions (`doctor::cluster_state`: DescribeCluster, Metadata, DescribeConfigs)
//! through this node's client listener. The quorum and the brokers' view cover the whole
//! cluster; metrics do too when `console.metrics.endpoints` lists the other nodes' `/metrics`
//! (nodes do not advertise `metrics.port`, so, as `kraftd doctor --metrics`, the console is
//! told where they are): each round scrapes them with the doctor's own scraper
//! (`doctor::scrape_all`), beside this node's render, so the page finds what only another
//! node's metrics show (a controller cut off from its leader, a node that cannot be read,
//! clock skew between nodes) as the doctor run from anywhere would.
//!
//! One computation serves every open page: it is kept for [`HEALTH_TTL`] and a request
//! meanwhile reads it, so the cost is one DescribeQuorum, one doctor cluster read (which is
//! O(partitions), as the doctor's) and one GET `/metrics` of each listed endpoint (in
//! parallel, each given the doctor's 3 s) per [`HEALTH_TTL`] however many pages are open.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kraftd_log::clock::unix_ms;
use kraftd_net::ClientSecurity;
use serde_json::{json, Value};

use crate::doctor::prom::Scrape;
use crate::doctor::rules::{self, Facts, Round, Severity};
use crate::metadata_quorum::Quorum;

/// How long one diagnosis is served before the next is computed.
pub const HEALTH_TTL: Duration = Duration::from_secs(2);

/// How long DescribeQuorum waits for a leader to be known (less than the doctor's, so a
/// page never waits long on a leaderless quorum).
const LEADER_WAIT: Duration = Duration::from_millis(500);

/// The addresses the diagnosis reads.
pub struct HealthSources {
    /// Controllers' `host:port` (the voters or `controller.quorum.bootstrap.servers`).
    pub controllers: Vec<String>,
    pub controller_security: ClientSecurity,
    /// This node's client listener, when it is a broker (`host:port`).
    pub broker: Option<String>,
    pub broker_security: ClientSecurity,
    /// This node's `/metrics` text.
    pub render_metrics: Arc<dyn Fn() -> String + Send + Sync>,
    /// The other nodes' `/metrics` endpoints (`console.metrics.endpoints`), `host:port`.
    pub metrics_endpoints: Vec<String>,
    pub max_clock_skew_ms: i64,
}

/// What one diagnosis read and found.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// [`findings_json`].
    pub health: Value,
    /// The leader's DescribeQuorum, when a controller answered.
    pub quorum: Option<Quorum>,
    /// This node's request counters for the overview's rate charts: `at_ms` and the
    /// cumulative Produce and consumer Fetch request counts (the browser derives rates).
    pub requests: Value,
    /// [`broker_bytes`]: each broker's cumulative bytes in and out, for the overview's
    /// broker table (the browser derives rates).
    pub bytes: Value,
}

/// The last diagnosis and the round it compared with.
#[derive(Default)]
pub struct HealthState {
    computed: Option<(Instant, Snapshot)>,
    previous: Option<Round>,
}

/// Kafka's `BrokerTopicMetrics` BytesInPerSec and BytesOutPerSec, as kraftd exports them.
const BYTES_IN_TOTAL: &str = "kafka_server_brokertopicmetrics_bytesin_total";
const BYTES_OUT_TOTAL: &str = "kafka_server_brokertopicmetrics_bytesout_total";

/// Kafka's request counter (`RequestMetrics` `RequestsPerSec`, per API and version).
const REQUESTS_TOTAL: &str = "kafka_network_RequestMetrics_RequestsPerSec_total";

impl HealthState {
    /// The findings, the quorum and the request counters, computed at most once per
    /// [`HEALTH_TTL`].
    pub async fn current(&mut self, sources: &HealthSources) -> Snapshot {
        if let Some((at, snapshot)) = &self.computed {
            if at.elapsed() < HEALTH_TTL {
                return snapshot.clone();
            }
        }
        let own = own_round(sources);
        // The overview charts this node's request rates, not the cluster's.
        let requests = request_counts(&own);
        let quorum = async {
            if sources.controllers.is_empty() {
                None
            } else {
                Some(
                    crate::metadata_quorum::describe(
                        &sources.controllers,
                        &sources.controller_security,
                        LEADER_WAIT,
                    )
                    .await
                    .map_err(|e| e.to_string()),
                )
            }
        };
        let cluster = async {
            match &sources.broker {
                None => None,
                Some(b) => Some(
                    crate::doctor::cluster_state(std::slice::from_ref(b), &sources.broker_security)
                        .await,
                ),
            }
        };
        // The other nodes' scrapes, the quorum and the brokers' view at once: a dead node's
        // scrape timeout is not added to the others.
        let (second, quorum, cluster) = tokio::join!(
            with_other_nodes(own, &sources.metrics_endpoints),
            quorum,
            cluster
        );
        let first = self.previous.take().unwrap_or_else(|| second.clone());
        let facts = Facts {
            first,
            second,
            quorum,
            cluster,
            max_clock_skew_ms: sources.max_clock_skew_ms,
        };
        let snapshot = Snapshot {
            health: findings_json(&facts),
            quorum: facts.quorum.as_ref().and_then(|q| q.as_ref().ok()).cloned(),
            requests,
            bytes: broker_bytes(&facts.second),
        };
        self.previous = Some(facts.second);
        self.computed = Some((Instant::now(), snapshot.clone()));
        snapshot
    }
}

/// The cumulative Produce and FetchConsumer request counts of this node's round.
fn request_counts(round: &Round) -> Value {
    let count = |request: &str| -> f64 {
        round
            .scrapes
            .iter()
            .flat_map(|s| s.all(REQUESTS_TOTAL))
            .filter(|s| s.label("request") == Some(request))
            .fold(0.0, |sum, s| sum + s.value)
    };
    json!({
        "at_ms": round.at_ms,
        "produce": count("Produce"),
        "fetch": count("FetchConsumer"),
    })
}

/// Each broker's cumulative bytes appended by produce requests and returned to consumers'
/// fetches (`BrokerTopicMetrics` BytesInPerSec / BytesOutPerSec), keyed by node id, from
/// the round's scrapes: this node's own, and those of `console.metrics.endpoints`.
fn broker_bytes(round: &Round) -> Value {
    let total = |s: &crate::doctor::prom::Scrape, name: &str| -> f64 {
        s.all(name).fold(0.0, |sum, x| sum + x.value)
    };
    let brokers: serde_json::Map<String, Value> = round
        .scrapes
        .iter()
        .filter(|s| s.is_broker())
        .map(|s| {
            (
                s.node.to_string(),
                json!({
                    "in": total(s, BYTES_IN_TOTAL),
                    "out": total(s, BYTES_OUT_TOTAL),
                }),
            )
        })
        .collect();
    json!({"at_ms": round.at_ms, "brokers": brokers})
}

/// This node's metrics as one round of the doctor's.
fn own_round(sources: &HealthSources) -> Round {
    let at = unix_ms();
    let text = (sources.render_metrics)();
    let mut round = Round {
        at_ms: at,
        ..Round::default()
    };
    match Scrape::from_text("this node", &text, at, at) {
        Ok(s) => round.scrapes.push(s),
        Err(e) => round.errors.push(("this node".into(), e)),
    }
    round
}

/// `own` with a scrape of each of `endpoints` (the doctor's, concurrent) whose node it does
/// not already hold: this node's render stands for itself when the list names it too.
async fn with_other_nodes(own: Round, endpoints: &[String]) -> Round {
    if endpoints.is_empty() {
        return own;
    }
    let mut round = crate::doctor::scrape_all(endpoints).await;
    round.errors.extend(own.errors);
    for s in own.scrapes {
        round.scrapes.retain(|other| other.node != s.node);
        round.scrapes.insert(0, s);
    }
    round
}

/// The findings, most serious first, and the doctor's status (0 healthy, 1 warnings, 2
/// critical), with the doctor's one healthy line when there are none.
pub fn findings_json(facts: &Facts) -> Value {
    let findings = rules::diagnose(facts);
    let status = if findings.iter().any(|f| f.severity == Severity::Critical) {
        2
    } else if findings.is_empty() {
        0
    } else {
        1
    };
    json!({
        "status": status,
        "healthy": findings.is_empty().then(|| rules::healthy_line(facts)),
        "findings": findings
            .iter()
            .map(|f| json!({
                "severity": match f.severity {
                    Severity::Critical => "critical",
                    Severity::Warning => "warning",
                },
                "text": f.text,
            }))
            .collect::<Vec<_>>(),
    })
}

/// The quorum as the overview shows it: leader, epoch, and each voter's and observer's
/// lag behind the leader's log end (in records) and last fetch age.
pub fn quorum_json(q: &Quorum, now_ms: i64) -> Value {
    let leader_end = q
        .voters
        .iter()
        .find(|v| v.replica_id == q.leader_id)
        .map(|v| v.log_end_offset)
        .unwrap_or(q.high_watermark);
    let replica = |r: &kraftd_protocol::messages::describe_quorum_response::ReplicaState,
                   role: &str| {
        json!({
            "id": r.replica_id,
            "role": if r.replica_id == q.leader_id { "leader" } else { role },
            "log_end_offset": r.log_end_offset,
            "lag": (leader_end - r.log_end_offset).max(0),
            "last_fetch_ms_ago": (r.last_fetch_timestamp >= 0)
                .then(|| (now_ms - r.last_fetch_timestamp).max(0)),
        })
    };
    json!({
        "leader_id": q.leader_id,
        "leader_epoch": q.leader_epoch,
        "high_watermark": q.high_watermark,
        "voters": q.voters.iter().map(|v| replica(v, "voter")).collect::<Vec<_>>(),
        "observers": q.observers.iter().map(|o| replica(o, "observer")).collect::<Vec<_>>(),
    })
}
