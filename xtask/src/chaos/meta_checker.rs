//! The metadata workload's checks (`--meta`): every acknowledged topic creation, deletion
//! and config change, ACL creation and deletion, client quota change and change of the
//! brokers' cluster-wide default config must be visible on every broker once the cluster
//! has healed, asked of each broker directly (Metadata, DescribeConfigs of the topic and of
//! the broker itself, DescribeAcls, DescribeClientQuotas: each answers from its own metadata
//! image), and the brokers must agree with each other. An operation whose outcome the client did not learn as a success (an error, a
//! timeout) is of unknown outcome: the controller may have applied it anyway (a request
//! forwarded before the fault, answered after the client gave up), so either state is
//! allowed for it — but the same on every broker.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::Result;
use serde_json::Value;

use super::checker::Anomaly;
use super::net::Lab;
use super::nodes;

/// The config the workload changes, on the workload's topic.
pub(super) const CONFIG_KEY: &str = "retention.ms";
/// The broker config whose cluster-wide default the workload changes (dynamic, cluster-wide
/// in Kafka and kraftd: `docs/configs.md`).
pub(super) const BROKER_CONFIG_KEY: &str = "log.retention.ms";
/// The quota the workload changes, of client id `<topic>-quota`.
pub(super) const QUOTA_KEY: &str = "producer_byte_rate";

/// The lines the brokers need for the ACL operations: Kafka's StandardAuthorizer (without
/// one the ACL APIs answer SECURITY_DISABLED), every client a super user (they connect as
/// `User:ANONYMOUS` over PLAINTEXT) so that the workload's ACLs restrict nothing.
pub(super) const AUTHORIZER_CONFIG: &str =
    "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
     super.users=User:ANONYMOUS\n";

/// One metadata operation as the client saw it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct MetaOp {
    /// `create`, `delete`, `config`, `create_acl`, `delete_acl`, `quota` or
    /// `config_broker`.
    pub(super) op: String,
    pub(super) topic: String,
    /// A config or quota change's value; an ACL's `<principal>|<topic>`.
    pub(super) value: Option<String>,
    /// Acknowledged as a success.
    pub(super) ok: bool,
    /// When its result came (Unix ms).
    pub(super) ms: u64,
}

/// What one broker shows after the faults: the workload's topics (by their prefix), the
/// changed config's value, the workload's ACLs, the quota's value and its own value of the
/// broker config.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct Seen {
    pub(super) topics: BTreeSet<String>,
    pub(super) config: Option<String>,
    /// The ACLs of principals `User:<topic>-*`, as `<principal>|<topic>` when they are what
    /// the workload creates (READ allowed on a literal topic from any host), else described
    /// in full.
    pub(super) acls: BTreeSet<String>,
    pub(super) quota: Option<String>,
    pub(super) broker_config: Option<String>,
}

/// The operations counted for the summary: acknowledged and unknown, by kind.
#[derive(Debug, Default)]
pub(super) struct MetaCounts {
    pub(super) acked: BTreeMap<String, usize>,
    pub(super) unknown: BTreeMap<String, usize>,
}

/// The metadata workload's history (`meta.jsonl`), if the run had one.
pub(super) fn read(dir: &Path) -> Result<Option<Vec<MetaOp>>> {
    let Ok(text) = std::fs::read_to_string(dir.join("meta.jsonl")) else {
        return Ok(None);
    };
    let mut ops = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let v: Value = serde_json::from_str(line)?;
        let Some(op) = v["op"].as_str() else { continue };
        ops.push(MetaOp {
            op: op.to_string(),
            topic: v["topic"].as_str().unwrap_or_default().to_string(),
            value: v["value"].as_str().map(str::to_string),
            ok: v["outcome"].as_str() == Some("ok"),
            ms: v["ms"].as_u64().unwrap_or(0),
        });
    }
    Ok(Some(ops))
}

/// What each of `brokers` shows now: the topics named `<topic>-meta-*` and `topic`'s
/// [`CONFIG_KEY`]; or what could not be asked.
pub(super) fn observe(lab: &Lab, brokers: &[u32], topic: &str) -> Result<BTreeMap<u32, Seen>> {
    let prefix = format!("{topic}-meta-");
    let mut seen = BTreeMap::new();
    for &id in brokers {
        let m = nodes::metadata_all(lab, id)?;
        let topics = m
            .topics
            .iter()
            .filter(|t| t.error_code == 0)
            .filter_map(|t| t.name.clone())
            .filter(|n| n.starts_with(&prefix))
            .collect();
        let config = nodes::topic_config(lab, id, topic, CONFIG_KEY)?;
        let principals = format!("User:{topic}-");
        let acls = nodes::acls(lab, id)?
            .into_iter()
            .flat_map(|mut res| {
                let acls = std::mem::take(&mut res.acls);
                acls.into_iter().map(move |a| {
                    // The workload's: TOPIC (2), LITERAL (3), any host, READ (3), ALLOW (3).
                    let ours = (res.resource_type, res.pattern_type, a.operation) == (2, 3, 3)
                        && a.permission_type == 3
                        && a.host == "*";
                    if ours {
                        format!("{}|{}", a.principal, res.resource_name)
                    } else {
                        format!(
                            "{} on {} (type {}, pattern {}): {a:?}",
                            a.principal, res.resource_name, res.resource_type, res.pattern_type
                        )
                    }
                })
            })
            .filter(|acl| acl.starts_with(&principals))
            .collect();
        let quota = nodes::client_quota(lab, id, &format!("{topic}-quota"), QUOTA_KEY)?
            .map(|v| v.to_string());
        let broker_config = nodes::broker_config(lab, id, BROKER_CONFIG_KEY)?;
        seen.insert(
            id,
            Seen {
                topics,
                config,
                acls,
                quota,
                broker_config,
            },
        );
    }
    Ok(seen)
}

/// The anomalies of `ops` against what the brokers show (`seen`), and the counts.
pub(super) fn check(ops: &[MetaOp], seen: &BTreeMap<u32, Seen>) -> (Vec<Anomaly>, MetaCounts) {
    let mut counts = MetaCounts::default();
    for op in ops {
        let by = if op.ok {
            &mut counts.acked
        } else {
            &mut counts.unknown
        };
        *by.entry(op.op.clone()).or_default() += 1;
    }
    let mut anomalies = Vec::new();
    let mut lost = |detail: String, at: u64| {
        anomalies.push(Anomaly {
            kind: "metadata lost",
            detail,
            at_ms: Some(at),
        })
    };
    // Topics: created and never asked to be deleted -> everywhere; deleted -> nowhere.
    let deletes: BTreeMap<&str, &MetaOp> = ops
        .iter()
        .filter(|o| o.op == "delete")
        .map(|o| (o.topic.as_str(), o))
        .collect();
    for create in ops.iter().filter(|o| o.op == "create" && o.ok) {
        if deletes.contains_key(create.topic.as_str()) {
            continue;
        }
        for (id, s) in seen {
            if !s.topics.contains(&create.topic) {
                lost(
                    format!(
                        "topic {} was created (acknowledged) and never deleted, but broker \
                         {id} does not list it",
                        create.topic
                    ),
                    create.ms,
                );
            }
        }
    }
    for delete in deletes.values().filter(|o| o.ok) {
        for (id, s) in seen {
            if s.topics.contains(&delete.topic) {
                lost(
                    format!(
                        "topic {} was deleted (acknowledged), but broker {id} still lists it",
                        delete.topic
                    ),
                    delete.ms,
                );
            }
        }
    }
    // ACLs as topics: created and never asked to be deleted -> everywhere; deleted ->
    // nowhere.
    let acl_deletes: BTreeSet<&str> = ops
        .iter()
        .filter(|o| o.op == "delete_acl")
        .filter_map(|o| o.value.as_deref())
        .collect();
    for create in ops.iter().filter(|o| o.op == "create_acl" && o.ok) {
        let Some(acl) = create.value.as_deref() else {
            continue;
        };
        if acl_deletes.contains(acl) {
            continue;
        }
        for (id, s) in seen {
            if !s.acls.contains(acl) {
                lost(
                    format!(
                        "ACL {acl} was created (acknowledged) and never deleted, but broker {id} \
                         does not have it (it has {:?})",
                        s.acls
                    ),
                    create.ms,
                );
            }
        }
    }
    for delete in ops.iter().filter(|o| o.op == "delete_acl" && o.ok) {
        let Some(acl) = delete.value.as_deref() else {
            continue;
        };
        for (id, s) in seen {
            if s.acls.contains(acl) {
                lost(
                    format!("ACL {acl} was deleted (acknowledged), but broker {id} still has it"),
                    delete.ms,
                );
            }
        }
    }
    // The values set again and again: the last acknowledged value, or one of a change of
    // unknown outcome (one sent earlier may still have been applied later: a forwarded
    // request the client gave up on).
    type Shown = fn(&Seen) -> Option<&str>;
    let values: [(&str, String, Shown); 3] = [
        ("config", format!("{CONFIG_KEY} of the topic"), |s| {
            s.config.as_deref()
        }),
        ("quota", format!("the client quota {QUOTA_KEY}"), |s| {
            s.quota.as_deref()
        }),
        (
            "config_broker",
            format!("the brokers' default {BROKER_CONFIG_KEY}"),
            |s| s.broker_config.as_deref(),
        ),
    ];
    for (kind, what, shown) in values {
        let changes: Vec<&MetaOp> = ops.iter().filter(|o| o.op == kind).collect();
        let Some(last) = changes.iter().rposition(|o| o.ok) else {
            continue;
        };
        let allowed: BTreeSet<&str> = changes
            .iter()
            .enumerate()
            .filter(|(i, o)| *i == last || !o.ok)
            .filter_map(|(_, o)| o.value.as_deref())
            .collect();
        for (id, s) in seen {
            if !shown(s).is_some_and(|v| allowed.contains(v)) {
                lost(
                    format!(
                        "{what} was last set to {:?} (acknowledged), but broker {id} shows \
                         {:?} (allowed: {allowed:?})",
                        changes[last].value,
                        shown(s)
                    ),
                    changes[last].ms,
                );
            }
        }
    }
    // Every broker the same.
    let mut views = seen.iter();
    if let Some((first_id, first)) = views.next() {
        for (id, s) in views {
            if s != first {
                anomalies.push(Anomaly {
                    kind: "metadata diverged",
                    detail: format!("broker {first_id} shows {first:?}, broker {id} shows {s:?}",),
                    at_ms: None,
                });
            }
        }
    }
    (anomalies, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(op: &str, topic: &str, value: Option<&str>, ok: bool) -> MetaOp {
        MetaOp {
            op: op.into(),
            topic: topic.into(),
            value: value.map(str::to_string),
            ok,
            ms: 1,
        }
    }

    fn seen(topics: &[&str], config: &str) -> Seen {
        Seen {
            topics: topics.iter().map(|t| t.to_string()).collect(),
            config: Some(config.into()),
            ..Default::default()
        }
    }

    fn kinds(anomalies: &[Anomaly]) -> Vec<&str> {
        anomalies.iter().map(|a| a.kind).collect()
    }

    #[test]
    fn acknowledged_operations_must_show_everywhere_and_unknown_ones_either_way() {
        let ops = vec![
            op("create", "t-meta-0", None, true),
            op("delete", "t-meta-0", None, true),
            op("create", "t-meta-1", None, true),
            op("create", "t-meta-2", None, false),
            op("config", "t", Some("10"), true),
            op("config", "t", Some("11"), false),
        ];
        // Unknown creation absent, unknown config change applied: fine, if all agree.
        let good = BTreeMap::from([
            (4, seen(&["t-meta-1"], "11")),
            (5, seen(&["t-meta-1"], "11")),
        ]);
        let (found, counts) = check(&ops, &good);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(counts.acked["create"], 2);
        assert_eq!(counts.unknown["config"], 1);
        // A deleted topic back, an acknowledged one missing, an older config value.
        let bad = BTreeMap::from([(4, seen(&["t-meta-0"], "9")), (5, seen(&["t-meta-0"], "9"))]);
        let (found, _) = check(&ops, &bad);
        assert_eq!(kinds(&found), ["metadata lost"; 6]);
        // Brokers that disagree on an unknown operation's outcome.
        let split = BTreeMap::from([
            (4, seen(&["t-meta-1", "t-meta-2"], "10")),
            (5, seen(&["t-meta-1"], "10")),
        ]);
        let (found, _) = check(&ops, &split);
        assert_eq!(kinds(&found), ["metadata diverged"]);
    }

    fn acls_seen(acls: &[&str], quota: &str, broker_config: &str) -> Seen {
        Seen {
            acls: acls.iter().map(|a| a.to_string()).collect(),
            quota: Some(quota.into()),
            broker_config: Some(broker_config.into()),
            ..Default::default()
        }
    }

    #[test]
    fn acls_quotas_and_broker_defaults_must_show_everywhere() {
        let ops = vec![
            op("create_acl", "", Some("User:t-0|t-acl-0"), true),
            op("delete_acl", "", Some("User:t-0|t-acl-0"), true),
            op("create_acl", "", Some("User:t-1|t-acl-1"), true),
            op("create_acl", "", Some("User:t-2|t-acl-2"), false),
            op("quota", "", Some("100"), true),
            op("quota", "", Some("101"), false),
            op("config_broker", "", Some("7"), false),
            op("config_broker", "", Some("8"), true),
        ];
        // The unknown ACL creation applied, the unknown quota change not: fine, if all agree.
        let good = BTreeMap::from([
            (
                4,
                acls_seen(&["User:t-1|t-acl-1", "User:t-2|t-acl-2"], "100", "8"),
            ),
            (
                5,
                acls_seen(&["User:t-1|t-acl-1", "User:t-2|t-acl-2"], "100", "8"),
            ),
        ]);
        let (found, counts) = check(&ops, &good);
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(counts.acked["create_acl"], 2);
        assert_eq!(counts.unknown["quota"], 1);
        // A deleted ACL back, an acknowledged one missing, an older quota and broker default.
        let bad = BTreeMap::from([(4, acls_seen(&["User:t-0|t-acl-0"], "99", "6"))]);
        let (found, _) = check(&ops, &bad);
        assert_eq!(kinds(&found), ["metadata lost"; 4]);
        // One broker without an ACL the other has, or another broker default.
        let split = BTreeMap::from([
            (4, acls_seen(&["User:t-1|t-acl-1"], "100", "8")),
            (
                5,
                acls_seen(&["User:t-1|t-acl-1", "User:t-2|t-acl-2"], "100", "7"),
            ),
        ]);
        let (found, _) = check(&ops, &split);
        assert_eq!(kinds(&found), ["metadata diverged"]);
    }
}
