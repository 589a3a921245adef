//! A streams topology against the topics as they are (Kafka's `InternalTopicManager`,
//! `RepartitionTopics`, `ChangelogTopics`, `CopartitionedTopicsEnforcer`): how many tasks
//! each subtopology has, which internal topics are missing (the broker creates them through
//! the controller), or why the topology cannot run yet (a StreamsGroupHeartbeat status).
//!
//! Computed afresh on each heartbeat from the persisted topology and the shard's metadata:
//! a deterministic function of both, so no cache has to follow topic changes.

use std::collections::{BTreeMap, BTreeSet};

use kraftd_protocol::coordinator::streams_group_topology_value::{
    CopartitionGroup, StreamsGroupTopologyValue, Subtopology, TopicConfig, TopicInfo,
};
use kraftd_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kraftd_protocol::messages::streams_group_heartbeat_request::{
    TopicInfo as RequestTopicInfo, Topology,
};

use super::assignor::SubtopologyTasks;
use crate::context::TopicMetadata;

/// StreamsGroupHeartbeat's status codes (Kafka's `StreamsGroupHeartbeatResponse.Status`).
pub mod status {
    pub const STALE_TOPOLOGY: i8 = 0;
    pub const MISSING_SOURCE_TOPICS: i8 = 1;
    pub const INCORRECTLY_PARTITIONED_TOPICS: i8 = 2;
    pub const MISSING_INTERNAL_TOPICS: i8 = 3;
    pub const SHUTDOWN_APPLICATION: i8 = 4;
    pub const ASSIGNMENT_DELAYED: i8 = 5;
}

/// A topology configured against the topics (Kafka's `ConfiguredTopology`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfiguredTopology {
    /// The number of tasks of each subtopology, when every source topic exists and the
    /// partition counts agree (internal topics may still be missing).
    pub tasks: Option<BTreeMap<String, i32>>,
    /// Internal topics that do not exist yet, as the broker should create them.
    pub to_create: Vec<CreatableTopic>,
    /// Why the topology cannot run: a status code and its detail.
    pub error: Option<(i8, String)>,
}

impl ConfiguredTopology {
    /// Kafka's `isReady`: tasks known and nothing missing.
    pub fn is_ready(&self) -> bool {
        self.tasks.is_some() && self.error.is_none()
    }
}

/// The topology as the StreamsGroupTopology record keeps it (Kafka's
/// `convertToStreamsGroupTopologyRecord`): subtopologies sorted by id.
pub fn topology_value(t: &Topology) -> StreamsGroupTopologyValue {
    let info = |i: &RequestTopicInfo| TopicInfo {
        name: i.name.clone(),
        partitions: i.partitions,
        replication_factor: i.replication_factor,
        topic_configs: i
            .topic_configs
            .iter()
            .map(|kv| TopicConfig {
                key: kv.key.clone(),
                value: kv.value.clone(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let mut subtopologies: Vec<Subtopology> = t
        .subtopologies
        .iter()
        .map(|s| Subtopology {
            subtopology_id: s.subtopology_id.clone(),
            source_topics: s.source_topics.clone(),
            source_topic_regex: s.source_topic_regex.clone(),
            state_changelog_topics: s.state_changelog_topics.iter().map(info).collect(),
            repartition_sink_topics: s.repartition_sink_topics.clone(),
            repartition_source_topics: s.repartition_source_topics.iter().map(info).collect(),
            copartition_groups: s
                .copartition_groups
                .iter()
                .map(|g| CopartitionGroup {
                    source_topics: g.source_topics.clone(),
                    source_topic_regex: g.source_topic_regex.clone(),
                    repartition_source_topics: g.repartition_source_topics.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    subtopologies.sort_by(|a, b| a.subtopology_id.cmp(&b.subtopology_id));
    StreamsGroupTopologyValue {
        epoch: t.epoch,
        subtopologies,
        ..Default::default()
    }
}

/// Every topic the topology reads or writes internally (Kafka's `requiredTopics`): the
/// metadata hash covers them.
pub fn required_topics(t: &StreamsGroupTopologyValue) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for s in &t.subtopologies {
        out.extend(s.source_topics.iter().cloned());
        out.extend(s.repartition_source_topics.iter().map(|r| r.name.clone()));
        out.extend(s.state_changelog_topics.iter().map(|r| r.name.clone()));
    }
    out
}

/// The subtopologies as the task assignor sees them (Kafka's `TopologyMetadata`): each one's
/// task count and whether it is stateful (has changelog topics), for a ready topology only.
pub fn assignor_subtopologies(
    t: &StreamsGroupTopologyValue,
    configured: &ConfiguredTopology,
) -> BTreeMap<String, SubtopologyTasks> {
    let Some(tasks) = configured.tasks.as_ref().filter(|_| configured.is_ready()) else {
        return BTreeMap::new();
    };
    tasks
        .iter()
        .map(|(id, n)| {
            let stateful = t
                .subtopologies
                .iter()
                .any(|s| s.subtopology_id == *id && !s.state_changelog_topics.is_empty());
            (
                id.clone(),
                SubtopologyTasks {
                    tasks: *n,
                    stateful,
                },
            )
        })
        .collect()
}

fn summarize(topics: &BTreeSet<String>) -> String {
    topics.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// Kafka's `InternalTopicManager.configureTopics`.
pub fn configure(
    t: &StreamsGroupTopologyValue,
    metadata: &dyn TopicMetadata,
) -> ConfiguredTopology {
    let failed = |code: i8, detail: String| ConfiguredTopology {
        tasks: None,
        to_create: Vec::new(),
        error: Some((code, detail)),
    };
    let missing: BTreeSet<String> = t
        .subtopologies
        .iter()
        .flat_map(|s| s.source_topics.iter())
        .filter(|n| metadata.topic_by_name(n).is_none())
        .cloned()
        .collect();
    if !missing.is_empty() {
        return failed(
            status::MISSING_SOURCE_TOPICS,
            format!("Source topics {} are missing.", summarize(&missing)),
        );
    }
    let decided = match decide_partition_counts(t, metadata) {
        Ok(d) => d,
        Err((code, detail)) => return failed(code, detail),
    };
    let count = |name: &str| {
        metadata
            .topic_by_name(name)
            .map(|(_, n)| n)
            .or_else(|| decided.get(name).copied())
    };
    let mut tasks = BTreeMap::new();
    for s in &t.subtopologies {
        let n = s
            .source_topics
            .iter()
            .map(String::as_str)
            .chain(s.repartition_source_topics.iter().map(|r| r.name.as_str()))
            .filter_map(count)
            .max()
            .unwrap_or(0);
        tasks.insert(s.subtopology_id.clone(), n);
    }
    // The internal topics and the partitions they must have; those absent are created.
    let mut expected: BTreeMap<String, (&TopicInfo, i32)> = BTreeMap::new();
    for s in &t.subtopologies {
        for r in &s.repartition_source_topics {
            expected.insert(r.name.clone(), (r, count(&r.name).unwrap_or(0)));
        }
        let n = tasks.get(&s.subtopology_id).copied().unwrap_or(0);
        for c in &s.state_changelog_topics {
            // A source topic reused as a changelog (Kafka's source-topic optimization) is
            // the user's, never created.
            if !s.source_topics.contains(&c.name) {
                expected.insert(c.name.clone(), (c, n));
            }
        }
    }
    let mut to_create = Vec::new();
    for (name, (info, partitions)) in &expected {
        match metadata.topic_by_name(name) {
            Some((_, found)) if found != *partitions => {
                return failed(
                    status::INCORRECTLY_PARTITIONED_TOPICS,
                    format!(
                        "Existing topic {name} has different number of partitions: expected \
                         {partitions}, found {found}"
                    ),
                )
            }
            Some(_) => {}
            None => to_create.push(CreatableTopic {
                name: name.clone(),
                num_partitions: *partitions,
                replication_factor: if info.replication_factor != 0 {
                    info.replication_factor
                } else {
                    -1
                },
                configs: info
                    .topic_configs
                    .iter()
                    .map(|c| CreatableTopicConfig {
                        name: c.key.clone(),
                        value: Some(c.value.clone()),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
        }
    }
    let error = (!to_create.is_empty()).then(|| {
        let names: BTreeSet<String> = to_create.iter().map(|c| c.name.clone()).collect();
        (
            status::MISSING_INTERNAL_TOPICS,
            format!("Internal topics are missing: {}", summarize(&names)),
        )
    });
    ConfiguredTopology {
        tasks: Some(tasks),
        to_create,
        error,
    }
}

/// The partition counts of the internal topics that do not fix theirs (Kafka's
/// `RepartitionTopics.setup` and the copartitioning enforcement): a repartition topic gets
/// the largest task count of the subtopologies writing to it, then each copartition group
/// is made to agree.
fn decide_partition_counts(
    t: &StreamsGroupTopologyValue,
    metadata: &dyn TopicMetadata,
) -> Result<BTreeMap<String, i32>, (i8, String)> {
    let mut decided: BTreeMap<String, i32> = BTreeMap::new();
    for s in &t.subtopologies {
        for r in &s.repartition_source_topics {
            if r.partitions != 0 {
                decided.insert(r.name.clone(), r.partitions);
            }
        }
    }
    let known = |name: &str, decided: &BTreeMap<String, i32>| {
        metadata
            .topic_by_name(name)
            .map(|(_, n)| n)
            .or_else(|| decided.get(name).copied())
    };
    let writers = |name: &str| -> Vec<&Subtopology> {
        t.subtopologies
            .iter()
            .filter(|s| s.repartition_sink_topics.iter().any(|n| n == name))
            .collect()
    };
    loop {
        let mut progress = false;
        let mut unresolved = BTreeSet::new();
        for s in &t.subtopologies {
            for r in &s.repartition_source_topics {
                if known(&r.name, &decided).is_some() {
                    continue;
                }
                let mut max = None;
                for w in writers(&r.name) {
                    for n in w
                        .source_topics
                        .iter()
                        .chain(w.repartition_source_topics.iter().map(|x| &x.name))
                    {
                        if let Some(c) = known(n, &decided) {
                            max = Some(max.map_or(c, |m: i32| m.max(c)));
                        }
                    }
                }
                match max {
                    Some(c) => {
                        decided.insert(r.name.clone(), c);
                        progress = true;
                    }
                    None => {
                        unresolved.insert(r.name.clone());
                    }
                }
            }
        }
        if unresolved.is_empty() {
            break;
        }
        if !progress {
            return Err((
                status::MISSING_SOURCE_TOPICS,
                format!(
                    "Failed to compute number of partitions for all repartition topics: {}",
                    summarize(&unresolved)
                ),
            ));
        }
    }
    // Copartitioned topics must agree: the user's topics among themselves; flexible
    // repartition topics take their count.
    for s in &t.subtopologies {
        for g in &s.copartition_groups {
            let sources: Vec<&str> = g
                .source_topics
                .iter()
                .filter_map(|i| s.source_topics.get(usize::try_from(*i).ok()?))
                .map(String::as_str)
                .collect();
            let repartitions: Vec<&TopicInfo> = g
                .repartition_source_topics
                .iter()
                .filter_map(|i| s.repartition_source_topics.get(usize::try_from(*i).ok()?))
                .collect();
            let counts: BTreeSet<i32> = sources.iter().filter_map(|n| known(n, &decided)).collect();
            if counts.len() > 1 {
                let names: BTreeSet<String> = sources.iter().map(|s| s.to_string()).collect();
                return Err((
                    status::INCORRECTLY_PARTITIONED_TOPICS,
                    format!(
                        "Following topics do not have the same number of partitions: [{}]",
                        summarize(&names)
                    ),
                ));
            }
            let target = counts.into_iter().next().or_else(|| {
                repartitions
                    .iter()
                    .filter_map(|r| known(&r.name, &decided))
                    .max()
            });
            if let Some(n) = target {
                for r in repartitions {
                    if r.partitions == 0 && metadata.topic_by_name(&r.name).is_none() {
                        decided.insert(r.name.clone(), n);
                    } else if known(&r.name, &decided) != Some(n) {
                        return Err((
                            status::INCORRECTLY_PARTITIONED_TOPICS,
                            format!(
                                "Number of partitions [{}] of repartition topic [{}] doesn't \
                                 match number of partitions [{n}] of the source topic.",
                                known(&r.name, &decided).unwrap_or(0),
                                r.name
                            ),
                        ));
                    }
                }
            }
        }
    }
    Ok(decided)
}
