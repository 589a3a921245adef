//! The doctor's rules about brokers and partitions (and what could not be read): fencing
//! and missing brokers, offline, under-min-ISR and under-replicated partitions, unclean and
//! ELR elections. Split from `rules.rs`, whose [`Facts`] they read: from the brokers'
//! DescribeCluster and Metadata when given, else from the controller's gauges when exported.

use std::collections::BTreeSet;

use super::rules::{cluster, push, quorum, Facts, Finding, PartitionState, Severity, LIST_LIMIT};

fn list<T: std::fmt::Display>(items: &[T]) -> String {
    let mut names: Vec<String> = items.iter().take(LIST_LIMIT).map(T::to_string).collect();
    if items.len() > LIST_LIMIT {
        names.push(format!("and {} more", items.len() - LIST_LIMIT));
    }
    names.join(", ")
}

/// `1 partition is`, `2 partitions are`.
fn partitions(n: usize) -> String {
    if n == 1 {
        "1 partition is".into()
    } else {
        format!("{n} partitions are")
    }
}

/// Ranks 30 and 50: offline partitions, under min ISR, under-replicated.
pub(super) fn partition_rules(f: &Facts, out: &mut Vec<Finding>) {
    let Some(c) = cluster(f) else {
        // The active controller's gauge, when exported.
        for s in &f.second.scrapes {
            if let Some(n) = s.get(
                "kafka_controller_KafkaController_OfflinePartitionsCount",
                &[],
            ) {
                if n > 0.0
                    && s.get(
                        "kafka_controller_KafkaController_ActiveControllerCount",
                        &[],
                    ) == Some(1.0)
                {
                    push(
                        out,
                        Severity::Critical,
                        30,
                        format!(
                            "{} offline (no leader), says the active controller {}",
                            partitions(n as usize),
                            s.node
                        ),
                    );
                }
            }
        }
        return;
    };
    let name = |p: &PartitionState| format!("{}-{}", p.topic, p.partition);
    let offline: Vec<String> = c
        .partitions
        .iter()
        .filter(|p| p.leader < 0)
        .map(|p| format!("{} (replicas {:?})", name(p), p.replicas))
        .collect();
    if !offline.is_empty() {
        push(
            out,
            Severity::Critical,
            30,
            format!(
                "{} offline (no leader): {}",
                partitions(offline.len()),
                list(&offline)
            ),
        );
    }
    let under_min: Vec<String> = c
        .partitions
        .iter()
        .filter(|p| p.leader >= 0 && p.min_isr.is_some_and(|m| p.isr.len() < m))
        .map(|p| {
            format!(
                "{} (ISR {:?}, min.insync.replicas {})",
                name(p),
                p.isr,
                p.min_isr.unwrap_or(0)
            )
        })
        .collect();
    if !under_min.is_empty() {
        push(
            out,
            Severity::Critical,
            50,
            format!(
                "{} under min ISR (acks=all produce fails): {}",
                partitions(under_min.len()),
                list(&under_min)
            ),
        );
    }
    let under_replicated: Vec<String> = c
        .partitions
        .iter()
        .filter(|p| p.leader >= 0 && p.isr.len() < p.replicas.len())
        .filter(|p| p.min_isr.is_none_or(|m| p.isr.len() >= m))
        .map(|p| format!("{} (ISR {:?} of {:?})", name(p), p.isr, p.replicas))
        .collect();
    if !under_replicated.is_empty() {
        push(
            out,
            Severity::Warning,
            50,
            format!(
                "{} under-replicated: {}",
                partitions(under_replicated.len()),
                list(&under_replicated)
            ),
        );
    }
}

/// Rank 40: brokers fenced, or referred to (scraped, observing, holding replicas) but not
/// registered.
pub(super) fn broker_rules(f: &Facts, out: &mut Vec<Finding>) {
    let Some(c) = cluster(f) else {
        for s in &f.second.scrapes {
            if let Some(n) = s.get("kafka_controller_KafkaController_FencedBrokerCount", &[]) {
                if n > 0.0
                    && s.get(
                        "kafka_controller_KafkaController_ActiveControllerCount",
                        &[],
                    ) == Some(1.0)
                {
                    push(
                        out,
                        Severity::Critical,
                        40,
                        format!(
                            "{n} brokers are fenced, says the active controller {}",
                            s.node
                        ),
                    );
                }
            }
        }
        return;
    };
    let unreachable = |id: i32| -> String {
        if f.second.node(id).is_none() && !f.second.errors.is_empty() {
            "; its /metrics was not read".into()
        } else {
            String::new()
        }
    };
    for b in c.brokers.iter().filter(|b| b.fenced) {
        push(
            out,
            Severity::Critical,
            40,
            format!(
                "broker {} is fenced: registered but without a heartbeat within the session \
                 timeout (down, shutting down, or cut off from the active controller); its \
                 partitions have moved or are offline{}",
                b.id,
                unreachable(b.id)
            ),
        );
    }
    let registered: BTreeSet<i32> = c.brokers.iter().map(|b| b.id).collect();
    let mut referred: BTreeSet<i32> = c
        .partitions
        .iter()
        .flat_map(|p| p.replicas.iter().copied())
        .collect();
    referred.extend(
        f.second
            .scrapes
            .iter()
            .filter(|s| s.is_broker())
            .map(|s| s.node),
    );
    if let Some(q) = quorum(f) {
        referred.extend(q.observers.iter().map(|o| o.replica_id));
    }
    for id in referred.difference(&registered) {
        let text = if c.fenced_listed {
            format!(
                "broker {id} is missing: it holds replicas or fetches metadata, but is not \
                 registered with the controller{}",
                unreachable(*id)
            )
        } else {
            format!(
                "broker {id} is missing or fenced: the brokers do not list it as alive{}",
                unreachable(*id)
            )
        };
        push(out, Severity::Critical, 40, text);
    }
}

/// Rank 60: leaders elected from the ELR or uncleanly (the controller's counters).
pub(super) fn election_rules(f: &Facts, out: &mut Vec<Finding>) {
    let sum = |name: &str| -> Vec<(i32, f64)> {
        f.second
            .scrapes
            .iter()
            .filter_map(|s| s.get(name, &[]).map(|v| (s.node, v)))
            .filter(|(_, v)| *v > 0.0)
            .collect()
    };
    let by = |v: &[(i32, f64)]| -> String {
        v.iter()
            .map(|(n, c)| format!("{c} by controller {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let unclean = sum("kafka_controller_ControllerStats_UncleanLeaderElectionsPerSec_total");
    if !unclean.is_empty() {
        push(
            out,
            Severity::Warning,
            60,
            format!(
                "leaders were elected uncleanly (from outside the ISR; acknowledged records \
                 may be lost) since the controllers started: {}",
                by(&unclean)
            ),
        );
    }
    let elr =
        sum("kafka_controller_ControllerStats_ElectionFromEligibleLeaderReplicasPerSec_total");
    if !elr.is_empty() {
        push(
            out,
            Severity::Warning,
            60,
            format!(
                "leaders were elected from the eligible leader replicas (the ISR had emptied) \
                 since the controllers started: {}",
                by(&elr)
            ),
        );
    }
}

/// Rank 90: what could not be read.
pub(super) fn reach_rules(f: &Facts, out: &mut Vec<Finding>) {
    if let Some(Err(e)) = &f.cluster {
        push(
            out,
            Severity::Critical,
            90,
            format!("no broker answers: {e}"),
        );
    }
    if f.second.scrapes.is_empty()
        && !f.second.errors.is_empty()
        && quorum(f).is_none()
        && cluster(f).is_none()
    {
        push(
            out,
            Severity::Critical,
            90,
            "cannot reach the cluster: no /metrics endpoint answered".into(),
        );
    }
    for (address, error) in &f.second.errors {
        push(
            out,
            Severity::Warning,
            90,
            format!("cannot read /metrics at {address}: {error}"),
        );
    }
}
