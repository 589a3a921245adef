//! The Interactive Queries map (Kafka's `EndpointToPartitionsManager` and
//! `StreamsGroup.buildEndpointToPartitions`): each member's `application.server` endpoint
//! with the input partitions of its active tasks and of its standby and warm-up tasks, sent
//! in StreamsGroupHeartbeat's PartitionsByUserEndpoint whenever the member's
//! EndpointInformationEpoch is behind the group's. Kafka Streams builds
//! `KafkaStreams.metadataForAllStreamsClients()` and `queryMetadataForKey` from it.
//!
//! The group's endpoint epoch is kept in memory only, as Kafka keeps it: it moves when a
//! member's endpoint changes or the tasks of a member with an endpoint change, and a new
//! coordinator starts it again at 0 (members then refetch the map on their next heartbeat).

use std::collections::BTreeSet;

use kraftd_protocol::coordinator::streams_group_topology_value::StreamsGroupTopologyValue;
use kraftd_protocol::messages::streams_group_heartbeat_response::{
    Endpoint, EndpointToPartitions, TopicPartition,
};

use super::group::{StreamsGroup, StreamsGroupMember, Tasks};
use crate::context::TopicMetadata;

/// Kafka's `hasUserEndpointChanged`: added, removed or different.
pub fn user_endpoint_changed(old: Option<&StreamsGroupMember>, new: &StreamsGroupMember) -> bool {
    old.and_then(|m| m.user_endpoint.as_ref()) != new.user_endpoint.as_ref()
}

/// The map for every member with an endpoint: the others first, then `updated` (as it will
/// be after this heartbeat), leaving out `replaced` (a static member `updated` takes over).
pub fn build(
    group: &StreamsGroup,
    updated: &StreamsGroupMember,
    replaced: Option<&str>,
    topology: Option<&StreamsGroupTopologyValue>,
    metadata: &dyn TopicMetadata,
) -> Vec<EndpointToPartitions> {
    group
        .members
        .values()
        .filter(|m| m.member_id != updated.member_id && Some(m.member_id.as_str()) != replaced)
        .chain(std::iter::once(updated))
        .filter_map(|m| endpoint_to_partitions(m, topology, metadata))
        .collect()
}

/// One member's entry (Kafka's `maybeEndpointToPartitions`): none without an endpoint.
/// Warm-up tasks run as standby tasks on the client, so they count as standby partitions.
pub fn endpoint_to_partitions(
    member: &StreamsGroupMember,
    topology: Option<&StreamsGroupTopologyValue>,
    metadata: &dyn TopicMetadata,
) -> Option<EndpointToPartitions> {
    let (host, port) = member.user_endpoint.as_ref()?;
    let mut replicas = member.assigned.standby.clone();
    for (s, ps) in &member.assigned.warmup {
        replicas.entry(s.clone()).or_default().extend(ps);
    }
    Some(EndpointToPartitions {
        user_endpoint: Endpoint {
            host: host.clone(),
            port: *port,
            ..Default::default()
        },
        active_partitions: topic_partitions(&member.assigned.active_tasks(), topology, metadata),
        standby_partitions: topic_partitions(&replicas, topology, metadata),
        ..Default::default()
    })
}

/// The input partitions of `tasks`: task p of a subtopology reads partition p of each of its
/// source and repartition source topics that has one (a subtopology has as many tasks as its
/// widest source; Kafka Streams' `PartitionGrouper` groups them the same way).
fn topic_partitions(
    tasks: &Tasks,
    topology: Option<&StreamsGroupTopologyValue>,
    metadata: &dyn TopicMetadata,
) -> Vec<TopicPartition> {
    let mut out = Vec::new();
    for (subtopology, partitions) in tasks {
        let Some(s) = topology.and_then(|t| {
            t.subtopologies
                .iter()
                .find(|s| s.subtopology_id == *subtopology)
        }) else {
            continue;
        };
        let sources: BTreeSet<&str> = s
            .source_topics
            .iter()
            .map(String::as_str)
            .chain(s.repartition_source_topics.iter().map(|r| r.name.as_str()))
            .collect();
        for topic in sources {
            // A topic the metadata does not know yet has no partition to serve.
            let Some((_, count)) = metadata.topic_by_name(topic) else {
                continue;
            };
            let partitions: Vec<i32> = partitions.iter().copied().filter(|p| *p < count).collect();
            if !partitions.is_empty() {
                out.push(TopicPartition {
                    topic: topic.to_string(),
                    partitions,
                    ..Default::default()
                });
            }
        }
    }
    out
}
