//! The Metadata answer (api key 3, every version our codec has): brokers, cluster id,
//! controller id and topics with their partitions, built from one `MetadataImage` as Kafka's
//! `KafkaApis.handleTopicMetadataRequest` over `KRaftMetadataCache` builds it.
//!
//! Kafka's behaviours kept here (apache/kafka `KRaftMetadataCache.java`, `KafkaApis.scala`,
//! `MetadataRequest.java`):
//! - brokers: the unfenced brokers that have the request's listener; others are omitted;
//! - `controller_id`: a random unfenced broker ([`random_alive_broker_id`]), not the quorum
//!   leader, which clients could not reach;
//! - all topics when `topics` is null, or empty at v0; by id (v12+, any non-zero id) the named
//!   entries are ignored and unknown ids get UNKNOWN_TOPIC_ID with a null name; a null name or
//!   a non-zero id below v12 fails the request with INVALID_REQUEST on every topic;
//! - a requested name that does not exist: UNKNOWN_TOPIC_OR_PARTITION, or
//!   INVALID_TOPIC_EXCEPTION when the name is not a legal topic name, zero topic id;
//! - per partition: the leader is returned while it is registered and has the listener, even
//!   if fenced (Kafka does not check fencing there; the controller moves leadership off
//!   fenced brokers); an unregistered leader or no leader gives leader -1 and
//!   LEADER_NOT_AVAILABLE; a leader without the listener gives -1 and LISTENER_NOT_FOUND (v6+)
//!   or LEADER_NOT_AVAILABLE (v0-5). Offline replicas are those unregistered, fenced, without
//!   the listener, or whose log directory is offline. v0 lists only alive replicas and ISR
//!   members and reports REPLICA_NOT_AVAILABLE when some were left out;
//! - topics the principal may not DESCRIBE (the caller's `describable`) are left out of an
//!   all-topics answer; named, they get TOPIC_AUTHORIZATION_FAILED with no partitions and no
//!   topic id (a topic named by id keeps its id, which Kafka does not count as sensitive,
//!   and loses its name), after the other entries, whether they exist or not;
//! - authorized operations are left at Kafka's "not provided" value
//!   ([`AUTHORIZED_OPERATIONS_OMITTED`]); the caller fills them when asked.
//!
//! Auto topic creation is the caller's: [`MetadataAnswer::missing_topics`] lists the
//! requested names that do not exist and are legal, whose entries carry
//! UNKNOWN_TOPIC_OR_PARTITION until the caller creates them and replaces the entries.

use std::collections::BTreeSet;

use kraftd_controller::control::topics::validate_topic_name;
use kraftd_controller::image::{PartitionRegistration, TopicImage};
use kraftd_controller::MetadataImage;
use kraftd_protocol::messages::metadata_request::MetadataRequest;
use kraftd_protocol::messages::metadata_response::{
    MetadataResponse, MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kraftd_protocol::{ErrorCode, Uuid};

use super::{endpoint, random_alive_broker_id, BrokerContext, AUTHORIZED_OPERATIONS_OMITTED};

/// Kafka's internal topics (`Topic.isInternal`).
const INTERNAL_TOPICS: &[&str] = &[
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
];

/// A Metadata response and what the caller may still have to do about it.
#[derive(Debug, Clone, PartialEq)]
pub struct MetadataAnswer {
    pub response: MetadataResponse,
    /// Requested topic names (by name, not all-topics) that do not exist and are legal
    /// names, in request order: candidates for auto topic creation. Their entries in
    /// `response.topics` carry UNKNOWN_TOPIC_OR_PARTITION.
    pub missing_topics: Vec<String>,
}

/// Whether the request asks for every topic: null topics, or an empty list at v0 (Kafka's
/// `MetadataRequest.isAllTopics`).
pub fn is_all_topics(request: &MetadataRequest, version: i16) -> bool {
    match &request.topics {
        None => true,
        Some(topics) => topics.is_empty() && version == 0,
    }
}

/// Whether Kafka counts `name` as an internal topic.
pub fn is_internal_topic(name: &str) -> bool {
    INTERNAL_TOPICS.contains(&name)
}

/// Answers a Metadata request at `version` from `image`, showing only topics `describable`
/// allows.
pub fn metadata_response(
    image: &MetadataImage,
    request: &MetadataRequest,
    version: i16,
    ctx: &BrokerContext<'_>,
    describable: &dyn Fn(&str) -> bool,
) -> MetadataAnswer {
    if is_invalid_request(request, version) {
        return MetadataAnswer {
            response: error_response(request, version),
            missing_topics: Vec::new(),
        };
    }
    let mut topics = Vec::new();
    let mut refused = Vec::new();
    let mut missing_topics = Vec::new();
    if is_all_topics(request, version) {
        for (name, id) in image.topics.names() {
            if !describable(name) {
                continue;
            }
            if let Some(topic) = image.topics.get(id) {
                topics.push(topic_metadata(image, topic, version, ctx));
            }
        }
    } else {
        let requested = request.topics.as_deref().unwrap_or_default();
        let ids: Vec<Uuid> = if version >= 10 {
            requested
                .iter()
                .map(|t| t.topic_id)
                .filter(|id| *id != Uuid::ZERO)
                .collect()
        } else {
            Vec::new()
        };
        let mut seen_ids = BTreeSet::new();
        if !ids.is_empty() {
            // By id: unknown ids first, as Kafka concatenates them.
            for id in ids.iter().filter(|id| image.topics.get(id).is_none()) {
                if seen_ids.insert(*id) {
                    topics.push(fit_topic(
                        MetadataResponseTopic {
                            error_code: ErrorCode::UnknownTopicId as i16,
                            name: None,
                            topic_id: *id,
                            is_internal: false,
                            ..Default::default()
                        },
                        version,
                    ));
                }
            }
            for id in &ids {
                if let Some(topic) = image.topics.get(id) {
                    if !seen_ids.insert(*id) {
                        continue;
                    }
                    if describable(&topic.name) {
                        topics.push(topic_metadata(image, topic, version, ctx));
                    } else {
                        refused.push(fit_topic(
                            MetadataResponseTopic {
                                error_code: ErrorCode::TopicAuthorizationFailed as i16,
                                name: None,
                                topic_id: *id,
                                ..Default::default()
                            },
                            version,
                        ));
                    }
                }
            }
        } else {
            let mut seen_names = BTreeSet::new();
            for name in requested.iter().map(|t| t.name.as_deref()) {
                let Some(name) = name else {
                    // Only reachable at v12+ with a zero id: not a legal topic.
                    topics.push(unknown_topic(
                        None,
                        ErrorCode::InvalidTopicException,
                        version,
                    ));
                    continue;
                };
                if !seen_names.insert(name) {
                    continue;
                }
                if !describable(name) {
                    refused.push(unknown_topic(
                        Some(name),
                        ErrorCode::TopicAuthorizationFailed,
                        version,
                    ));
                    continue;
                }
                match image.topics.get_by_name(name) {
                    Some(topic) => topics.push(topic_metadata(image, topic, version, ctx)),
                    None => {
                        let error = if validate_topic_name(name).is_ok() {
                            missing_topics.push(name.to_string());
                            ErrorCode::UnknownTopicOrPartition
                        } else {
                            ErrorCode::InvalidTopicException
                        };
                        topics.push(unknown_topic(Some(name), error, version));
                    }
                }
            }
        }
    }
    topics.extend(refused);
    let response = MetadataResponse {
        throttle_time_ms: 0,
        brokers: alive_brokers(image, version, ctx.listener_name),
        cluster_id: (version >= 2).then(|| ctx.cluster_id.to_string()),
        controller_id: if version >= 1 {
            random_alive_broker_id(image, ctx.controller_seed)
        } else {
            MetadataResponse::default().controller_id
        },
        topics,
        cluster_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
        error_code: 0,
        unknown_tagged_fields: Vec::new(),
    };
    MetadataAnswer {
        response,
        missing_topics,
    }
}

/// The entry for one existing topic, as `KRaftMetadataCache.getTopicMetadata` builds it.
pub fn topic_metadata(
    image: &MetadataImage,
    topic: &TopicImage,
    version: i16,
    ctx: &BrokerContext<'_>,
) -> MetadataResponseTopic {
    let partitions = topic
        .partitions
        .iter()
        .map(|(index, partition)| {
            partition_metadata(image, *index, partition, version, ctx.listener_name)
        })
        .collect();
    fit_topic(
        MetadataResponseTopic {
            error_code: 0,
            name: Some(topic.name.clone()),
            topic_id: topic.id,
            is_internal: is_internal_topic(&topic.name),
            partitions,
            topic_authorized_operations: AUTHORIZED_OPERATIONS_OMITTED,
            unknown_tagged_fields: Vec::new(),
        },
        version,
    )
}

/// The entry for a requested topic that does not exist (or may not be described: Kafka
/// then says nothing about it, not even whether it is internal).
pub fn unknown_topic(name: Option<&str>, error: ErrorCode, version: i16) -> MetadataResponseTopic {
    fit_topic(
        MetadataResponseTopic {
            error_code: error as i16,
            name: name.map(str::to_string),
            topic_id: Uuid::ZERO,
            is_internal: error != ErrorCode::TopicAuthorizationFailed
                && name.is_some_and(is_internal_topic),
            ..Default::default()
        },
        version,
    )
}

/// Leaves the fields `version` lacks at their defaults.
fn fit_topic(mut topic: MetadataResponseTopic, version: i16) -> MetadataResponseTopic {
    if version < 10 {
        topic.topic_id = Uuid::ZERO;
    }
    if version < 1 {
        topic.is_internal = false;
    }
    if version < 12 && topic.name.is_none() {
        topic.name = Some(String::new());
    }
    topic
}

fn partition_metadata(
    image: &MetadataImage,
    index: i32,
    partition: &PartitionRegistration,
    version: i16,
    listener: &str,
) -> MetadataResponsePartition {
    // v0 reports only replicas a client can reach, and an error when some are missing.
    let filter_unavailable = version == 0;
    let reachable = |ids: &[i32]| -> Vec<i32> {
        if !filter_unavailable {
            return ids.to_vec();
        }
        ids.iter()
            .copied()
            .filter(|id| {
                image
                    .cluster
                    .broker(*id)
                    .is_some_and(|b| !b.fenced && endpoint(b, listener).is_some())
            })
            .collect()
    };
    let replica_nodes = reachable(&partition.replicas);
    let isr_nodes = reachable(&partition.isr);
    let offline_replicas = if version >= 5 {
        partition
            .replicas
            .iter()
            .zip(&partition.directories)
            .filter(|(id, dir)| match image.cluster.broker(**id) {
                None => true,
                Some(b) => b.fenced || endpoint(b, listener).is_none() || !b.has_online_dir(**dir),
            })
            .map(|(id, _)| *id)
            .collect()
    } else {
        Vec::new()
    };
    let leader = image.cluster.broker(partition.leader);
    let (leader_id, error) = match leader {
        None => (-1, ErrorCode::LeaderNotAvailable),
        Some(b) if endpoint(b, listener).is_none() => (
            -1,
            if version >= 6 {
                ErrorCode::ListenerNotFound
            } else {
                ErrorCode::LeaderNotAvailable
            },
        ),
        Some(b) => {
            let error = if replica_nodes.len() < partition.replicas.len()
                || isr_nodes.len() < partition.isr.len()
            {
                ErrorCode::ReplicaNotAvailable
            } else {
                ErrorCode::None
            };
            (b.id, error)
        }
    };
    MetadataResponsePartition {
        error_code: error as i16,
        partition_index: index,
        leader_id,
        leader_epoch: if version >= 7 {
            partition.leader_epoch
        } else {
            MetadataResponsePartition::default().leader_epoch
        },
        replica_nodes,
        isr_nodes,
        offline_replicas,
        unknown_tagged_fields: Vec::new(),
    }
}

/// The unfenced brokers with the request's listener, in id order
/// (`KRaftMetadataCache.getAliveBrokerNodes`).
fn alive_brokers(
    image: &MetadataImage,
    version: i16,
    listener: &str,
) -> Vec<MetadataResponseBroker> {
    image
        .cluster
        .brokers()
        .filter(|b| !b.fenced)
        .filter_map(|b| {
            endpoint(b, listener).map(|e| MetadataResponseBroker {
                node_id: b.id,
                host: e.host.clone(),
                port: i32::from(e.port),
                rack: if version >= 1 { b.rack.clone() } else { None },
                unknown_tagged_fields: Vec::new(),
            })
        })
        .collect()
}

/// Kafka refuses a null topic name or a non-zero topic id below v12 (topic ids in requests
/// came with v12, although the field exists from v10).
fn is_invalid_request(request: &MetadataRequest, version: i16) -> bool {
    version < 12
        && request
            .topics
            .iter()
            .flatten()
            .any(|t| t.name.is_none() || t.topic_id != Uuid::ZERO)
}

/// Kafka's `MetadataRequest.getErrorResponse` for INVALID_REQUEST: every requested topic
/// with the error and no partitions, the top-level error (v13+), nothing else.
fn error_response(request: &MetadataRequest, version: i16) -> MetadataResponse {
    let code = ErrorCode::InvalidRequest as i16;
    let topics = request
        .topics
        .iter()
        .flatten()
        .map(|t| {
            fit_topic(
                MetadataResponseTopic {
                    error_code: code,
                    name: Some(t.name.clone().unwrap_or_default()),
                    topic_id: t.topic_id,
                    is_internal: false,
                    ..Default::default()
                },
                version,
            )
        })
        .collect();
    MetadataResponse {
        topics,
        error_code: if version >= 13 { code } else { 0 },
        ..Default::default()
    }
}
