//! The broker's side of Kafka's `AuthHelper`: each request's [`RequestAuth`] (the
//! connection's principal and client address against the node's authorizer, reached
//! through its [`NodePublishers`](kraftd_controller::publisher::NodePublishers)), and the
//! checks of the requests a broker answers itself that are more than "one operation on one
//! resource" — Produce's, InitProducerId's, Metadata's, DescribeConfigs' — with Kafka's
//! errors. The group, transaction and data-plane handlers ask the same [`RequestAuth`] per
//! group, transactional id or topic, as Kafka's handlers ask its `AuthHelper`.

use std::collections::{BTreeSet, HashMap};

use kraftd_controller::auth::{AuthHelper, RequestAuth};
use kraftd_controller::control::acl::{
    OPERATION_WRITE, RESOURCE_TYPE_CLUSTER, RESOURCE_TYPE_TOPIC,
};
use kraftd_controller::publisher::{
    OPERATION_CREATE, OPERATION_DESCRIBE, OPERATION_IDEMPOTENT_WRITE, OPERATION_TWO_PHASE_COMMIT,
    RESOURCE_TYPE_TRANSACTIONAL_ID,
};
use kraftd_controller::MetadataImage;
use kraftd_net::InboundRequest;
use kraftd_protocol::messages::{InitProducerIdRequest, ProduceRequest};
use kraftd_protocol::records::Batches;
use kraftd_protocol::{ErrorCode, Uuid};

/// Produce v13+ names topics by id.
const PRODUCE_TOPIC_ID_VERSION: i16 = 13;

/// A partition as a Produce request names it: topic name, topic id, index.
pub type ProducePartition = (String, Uuid, i32);

/// The checks of `request`, as its connection's principal from its peer's address.
pub fn request_auth(auth: &AuthHelper, request: &InboundRequest) -> RequestAuth {
    auth.request(&request.session.principal, request.peer.ip())
}

/// Kafka's `handleProduceRequest` checks: transactional batches need WRITE on the
/// transactional id (else every partition is refused with
/// TRANSACTIONAL_ID_AUTHORIZATION_FAILED); each topic needs WRITE (else its partitions get
/// TOPIC_AUTHORIZATION_FAILED, even when it does not exist). A topic id this broker does not
/// know is left to the append's own UNKNOWN_TOPIC_ID.
pub fn produce_refusals(
    auth: &RequestAuth,
    image: &MetadataImage,
    version: i16,
    request: &ProduceRequest,
) -> HashMap<ProducePartition, ErrorCode> {
    let mut refused = HashMap::new();
    if !auth.is_enabled() {
        return refused;
    }
    let partitions = || {
        request.topic_data.iter().flat_map(|t| {
            t.partition_data
                .iter()
                .map(move |p| ((t.name.clone(), t.topic_id, p.index), p))
        })
    };
    let transactional = partitions().any(|(_, p)| {
        p.records.as_ref().is_some_and(|records| {
            Batches::new(records.clone()).any(|b| b.is_ok_and(|b| b.is_transactional()))
        })
    });
    if transactional {
        let allowed = request
            .transactional_id
            .as_deref()
            .is_some_and(|id| auth.authorize(OPERATION_WRITE, RESOURCE_TYPE_TRANSACTIONAL_ID, id));
        if !allowed {
            return partitions()
                .map(|(key, _)| (key, ErrorCode::TransactionalIdAuthorizationFailed))
                .collect();
        }
    }
    let by_id = version >= PRODUCE_TOPIC_ID_VERSION;
    let mut write = auth.memo(OPERATION_WRITE, RESOURCE_TYPE_TOPIC);
    for topic in &request.topic_data {
        let name = if by_id && topic.topic_id != Uuid::ZERO {
            match image.topics.get(&topic.topic_id) {
                Some(t) => t.name.clone(),
                None => continue,
            }
        } else {
            topic.name.clone()
        };
        if !write.allowed(&name) {
            for p in &topic.partition_data {
                refused.insert(
                    (topic.name.clone(), topic.topic_id, p.index),
                    ErrorCode::TopicAuthorizationFailed,
                );
            }
        }
    }
    refused
}

/// Kafka's `handleInitProducerIdRequest` checks: WRITE (and TWO_PHASE_COMMIT for KIP-939)
/// on the transactional id, or for an idempotent producer IDEMPOTENT_WRITE on the cluster or
/// WRITE on some topic.
pub fn init_producer_id_refusal(
    auth: &RequestAuth,
    request: &InitProducerIdRequest,
) -> Option<ErrorCode> {
    match request.transactional_id.as_deref() {
        Some(id) => {
            let write = auth.authorize(OPERATION_WRITE, RESOURCE_TYPE_TRANSACTIONAL_ID, id);
            let two_pc = !request.enable2_pc
                || auth.authorize(
                    OPERATION_TWO_PHASE_COMMIT,
                    RESOURCE_TYPE_TRANSACTIONAL_ID,
                    id,
                );
            (!(write && two_pc)).then_some(ErrorCode::TransactionalIdAuthorizationFailed)
        }
        None => {
            let allowed = auth.authorize_cluster(OPERATION_IDEMPOTENT_WRITE)
                || auth.authorize_by_resource_type(OPERATION_WRITE, RESOURCE_TYPE_TOPIC);
            (!allowed).then_some(ErrorCode::ClusterAuthorizationFailed)
        }
    }
}

/// Of `missing` (topics Metadata would create), those the principal may not create: CREATE
/// on the cluster covers all, else CREATE on each topic.
pub fn uncreatable(auth: &RequestAuth, missing: &[String]) -> BTreeSet<String> {
    if missing.is_empty() || auth.authorize_cluster(OPERATION_CREATE) {
        return BTreeSet::new();
    }
    let allowed = auth.filter(
        OPERATION_CREATE,
        RESOURCE_TYPE_TOPIC,
        missing.iter().map(String::as_str),
    );
    missing
        .iter()
        .filter(|n| !allowed.contains(*n))
        .cloned()
        .collect()
}

/// The cluster's `authorized_operations` for a DescribeCluster or Metadata that asks: the
/// bit field when the principal may DESCRIBE the cluster, else 0.
pub fn cluster_authorized_operations(auth: &RequestAuth) -> i32 {
    if auth.authorize_cluster(OPERATION_DESCRIBE) {
        auth.authorized_operations(
            RESOURCE_TYPE_CLUSTER,
            kraftd_controller::control::acl::CLUSTER_RESOURCE_NAME,
        )
    } else {
        0
    }
}

#[cfg(test)]
mod tests;
